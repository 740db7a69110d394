"""Runs bench/pep_bench (Google Benchmark) and the same work in Python `packaging`, and prints
nanoseconds per operation for both with the ratio.

    python3 bench/pep_compare.py build-bench/bench/pep_bench

Uses pip's vendored packaging (nothing is installed). Without an argument it prints only the
Python side.
"""
import json
import subprocess
import sys
import timeit

try:
    from pip._vendor.packaging.markers import Marker
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.specifiers import SpecifierSet
    from pip._vendor.packaging.version import Version
    import pip._vendor.packaging as packaging_module
except ImportError:  # pragma: no cover
    from packaging.markers import Marker
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version
    import packaging as packaging_module

# Keep in sync with bench/pep_bench.cpp.
VERSIONS = ["2.8.0+cu128", "9.10.2.21", "12.8.93", "1.0", "1.0.post1", "2.0rc1",
            "1!2.0", "13.0.2", "0.8.0.dev3", "2.27.3", "3.12.3", "1.26.4"]
SPECIFIER = ">=2.0,<3,!=2.5.*"
MARKER = 'platform_system == "Linux" and platform_machine == "x86_64"'
MARKER_COMPLEX = ('python_version >= "3.9" and (sys_platform == "linux" or '
                  'sys_platform == "darwin") and extra == "cuda"')
REQUIREMENT = ('nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux" and '
               'platform_machine == "x86_64"')
ENV = {
    "python_version": "3.12", "python_full_version": "3.12.3", "os_name": "posix",
    "sys_platform": "linux", "platform_release": "6.1.0", "platform_system": "Linux",
    "platform_machine": "x86_64", "platform_python_implementation": "CPython",
    "implementation_name": "cpython", "implementation_version": "3.12.3",
    "platform_version": "#1 SMP", "extra": "",
}


def per_op_ns(fn, ops_per_call):
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    best = min(timer.repeat(repeat=5, number=number))
    return best / (number * ops_per_call) * 1e9


def python_side():
    parsed = [Version(v) for v in VERSIONS]
    pairs = [(parsed[i], parsed[(i + 5) % len(parsed)]) for i in range(len(parsed))]
    spec = SpecifierSet(SPECIFIER)
    marker = Marker(MARKER)
    complex_marker = Marker(MARKER_COMPLEX)
    env_cuda = dict(ENV, extra="cuda")
    sort_input = [Version(f"{i % 7}.{i % 13}.{i}") for i in range(1000)]
    n = len(VERSIONS)
    return {
        "BM_VersionParse": per_op_ns(lambda: [Version(v) for v in VERSIONS], n),
        "BM_VersionCompare": per_op_ns(lambda: [a < b for a, b in pairs], n),
        "BM_VersionSort1000": per_op_ns(lambda: sorted(sort_input), 1),
        "BM_SpecifierContains": per_op_ns(lambda: [spec.contains(v) for v in parsed], n),
        "BM_MarkerParse": per_op_ns(lambda: Marker(MARKER), 1),
        "BM_MarkerEvaluate": per_op_ns(lambda: marker.evaluate(ENV), 1),
        "BM_MarkerEvaluateComplex": per_op_ns(lambda: complex_marker.evaluate(env_cuda), 1),
        "BM_RequirementParse": per_op_ns(lambda: Requirement(REQUIREMENT), 1),
    }


def cpp_side(binary):
    out = subprocess.run([binary, "--benchmark_format=json", "--benchmark_min_time=0.2"],
                         check=True, capture_output=True, text=True).stdout
    result = {}
    for b in json.loads(out)["benchmarks"]:
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6}[b["time_unit"]]
        result[b["name"]] = b["cpu_time"] * scale
    return result


def main():
    py = python_side()
    cpp = cpp_side(sys.argv[1]) if len(sys.argv) > 1 else {}
    print(f"Python {sys.version.split()[0]}, packaging {packaging_module.__version__}")
    print(f"{'operation':28} {'venvfix ns':>12} {'packaging ns':>14} {'speed-up':>9}")
    for name, py_ns in py.items():
        c = cpp.get(name)
        if c is None:
            print(f"{name:28} {'-':>12} {py_ns:14.0f} {'-':>9}")
        else:
            print(f"{name:28} {c:12.1f} {py_ns:14.0f} {py_ns / c:8.0f}x")


if __name__ == "__main__":
    main()
