#!/usr/bin/env bash
# Benchmark: what `venvfix doctor --probe` costs, as whole processes side by side with the
# import it runs and with the static doctor: `python -I -c "import torch"`, `venvfix doctor
# --probe` and `venvfix doctor`, on a healthy test-world venv (host view) and on the seed
# (hermetic view: --ld-cache of the world's cache; the bare import runs under
# tests/world/hermetic_run.sh so that it fails the same way). Runs are interleaved (one of each
# per round) so that load from other processes spreads over all three alike.
#
#   bench/probe_bench.sh [WORK_DIR] [ROUNDS]
#
# Results go to stdout; docs/benchmarks.md records them.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=build/release
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVENVFIX_TESTS=OFF >/dev/null
nice cmake --build "$build_dir" -j2 >/dev/null
venvfix="$PWD/$build_dir/venvfix"

work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/venvfix-probe-bench.XXXXXX")}
rounds=${2:-20}
mkdir -p "$work"
python3 tests/world/world.py build --out "$work/world" >/dev/null
for name in healthy seed; do
  rm -rf "$work/$name"
  python3 tests/world/world.py scenario "$name" --world "$work/world" --out "$work/$name" >/dev/null
done
cache="$work/world/hermetic/ld.so.cache"
runner="$PWD/tests/world/hermetic_run.sh"
# One run each fills the hash caches (<venv>/.venvfix); the timed runs are warm.
"$venvfix" --venv "$work/healthy" doctor >/dev/null || true
"$venvfix" --venv "$work/seed" --ld-cache "$cache" doctor >/dev/null || true
echo "cores: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg); rounds: $rounds"

nice python3 - "$rounds" "$work" "$venvfix" "$cache" "$runner" <<'PY'
import statistics, subprocess, sys, time
rounds, work, venvfix, cache, runner = int(sys.argv[1]), *sys.argv[2:]
sets = {
    "healthy, host view": [
        ("python -I -c 'import torch'", [f"{work}/healthy/bin/python", "-I", "-c", "import torch"]),
        ("venvfix doctor --probe", [venvfix, "--venv", f"{work}/healthy", "doctor", "--probe"]),
        ("venvfix doctor", [venvfix, "--venv", f"{work}/healthy", "doctor"]),
    ],
    "seed, hermetic view": [
        ("hermetic_run.sh … python -I -c 'import torch'",
         [runner, cache, "--", f"{work}/seed/bin/python", "-I", "-c", "import torch"]),
        ("venvfix --ld-cache … doctor --probe",
         [venvfix, "--venv", f"{work}/seed", "--ld-cache", cache, "doctor", "--probe"]),
        ("venvfix --ld-cache … doctor", [venvfix, "--venv", f"{work}/seed", "--ld-cache", cache, "doctor"]),
    ],
}
for title, commands in sets.items():
    times = {name: [] for name, _ in commands}
    for _ in range(2):  # warm-up
        for _, argv in commands:
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(rounds):
        for name, argv in commands:
            start = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name].append((time.perf_counter() - start) * 1000)
    print(f"\n{title}\n")
    print("| command | median | mean | min | max |")
    print("|:---|---:|---:|---:|---:|")
    for name, values in times.items():
        print(f"| `{name}` | {statistics.median(values):.0f} ms | {statistics.mean(values):.0f} ms "
              f"| {min(values):.0f} ms | {max(values):.0f} ms |")
    imp, probe, static = (statistics.median(times[n]) for n, _ in commands)
    print(f"\ndoctor --probe - import: {probe - imp:+.0f} ms (median); "
          f"doctor --probe - doctor: {probe - static:+.0f} ms")
PY
