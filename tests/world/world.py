#!/usr/bin/env python3
"""venvfix's test world: real ELF libraries, real wheels, a local index, pip-made venvs.

    world.py build --out DIR [--big]          libraries, wheels, index, hermetic cache (cached)
    world.py scenario NAME --world DIR --out VENV   a fresh copy of scenario NAME's venv
    world.py hermetic-cache --out FILE        an ld.so.cache without the host's CUDA dirs
    world.py list-scenarios

Everything is derived from manifests/ (see docs/test-world.md). Python 3.11 standard library
only. `build` is idempotent and safe under concurrent callers: an fcntl lock on DIR/.lock and
a stamp keyed by a hash of manifests/ and tests/world/.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cuda13index  # noqa: E402
import elfgen  # noqa: E402
import indexgen  # noqa: E402
import scenarios  # noqa: E402
import variants  # noqa: E402
import worlddata  # noqa: E402
from pepmini import Requirement, SpecifierSet  # noqa: E402
from wheelgen import Wheel  # noqa: E402

SOURCE_DIR = HERE.parents[1]
MANIFESTS = SOURCE_DIR / "manifests"
STAMP = ".venvfix-world-stamp"
HERMETIC_DIRS = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/usr/local/lib",
                 "/usr/local/lib/x86_64-linux-gnu"]


def load_manifests() -> tuple[dict, dict]:
    nv = json.loads((MANIFESTS / "nvidia-wheels.json").read_text())
    torch = json.loads((MANIFESTS / "torch.json").read_text())
    return {d["name"]: d for d in nv["distributions"]}, torch


def source_hash(big: bool) -> str:
    h = hashlib.sha256()
    for base in (MANIFESTS, HERE):
        for p in sorted(base.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                h.update(str(p.relative_to(SOURCE_DIR)).encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(f"{sys.version_info[:2]} big={big}".encode())
    return h.hexdigest()


@contextlib.contextmanager
def locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def release_of(dist: dict, version: str) -> dict:
    hits = [r for r in dist["releases"] if SpecifierSet(r["versions"]).contains(version)]
    if len(hits) != 1:
        raise SystemExit(f"manifests: {dist['name']} {version} matches {len(hits)} releases")
    return hits[0]


def wanted_nvidia(dists: dict, torch: dict) -> set[tuple[str, str]]:
    """Every (distribution, version) a torch build pins, directly or through cuda-toolkit extras."""
    out: set[tuple[str, str]] = set(worlddata.NEWER_VERSIONS)
    for b in world_builds(torch):
        for text in b["requires_dist"]:
            req = Requirement(text)
            if req.name not in dists:
                continue
            version = req.pinned_version()
            if version is None:
                continue  # a range (torch 2.12's nvidia-cublas): worlddata serves its versions
            out.add((req.name, version))
            if dists[req.name].get("meta"):
                for extra_req in release_of(dists[req.name], version)["extras"].values():
                    sub = Requirement(extra_req)
                    out.add((sub.name, sub.pinned_version()))
    return out


def world_builds(torch: dict) -> list[dict]:
    """The torch builds the world builds: those with `libraries` (the rest are data only)."""
    return [b for b in torch["builds"] if "libraries" in b]


def python_tag() -> str:
    return f"cp{sys.version_info[0]}{sys.version_info[1]}"


class Builder:
    def __init__(self, out: Path, big: bool) -> None:
        self.out = out
        self.big = big
        self.files = out / "index" / "files"
        self.files.mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(prefix="work-", dir=out))
        self.elf = elfgen.ElfFactory(self.work)
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
        self.dists, self.torch = load_manifests()

    def lib_jobs(self, stage: Path, items: list[tuple]) -> dict[str, bytes]:
        """Links (path_in_wheel, soname, needed, ident, rpath, runpath[, dlopens]) items; returns their bytes."""
        futures = []
        for rel, soname, needed, ident, rpath, runpath, *dlopens in items:
            target = stage / rel
            futures.append((rel, target, self.pool.submit(self.elf.library, target, soname, needed, ident, rpath, runpath,
                                                          dlopens[0] if dlopens else None)))
        out = {}
        for rel, target, fut in futures:
            fut.result()
            out[rel] = target.read_bytes()
        return out

    def nvidia_wheel(self, name: str, version: str, dest: Path | None = None, runpath: bool = True) -> None:
        """The wheel into dest (default: the index); runpath=False drops every DT_RUNPATH (a variant)."""
        dist = self.dists[name]
        rel = release_of(dist, version)
        stage = self.work / f"{name}-{version}-{'runpath' if runpath else 'norunpath'}"
        items = [(f"{dist['lib_dir']}/{lib['file']}", lib["soname"], lib["needed"],
                  f"venvfix-world {name} {version} {lib['soname']}", lib.get("rpath"),
                  lib.get("runpath") if runpath else None, lib.get("dlopens", []))
                 for lib in rel["libraries"]]
        files = self.lib_jobs(stage, items)
        if dist["lib_dir"].endswith("/lib") and "cudnn" in name:
            files[dist["lib_dir"][:-4] + "/include/cudnn_version.h"] = (
                f"/* {name} {version} (venvfix test world) */\n#define CUDNN_MAJOR {version.split('.')[0]}\n").encode()
        Wheel(name=name, version=version, purelib=True,
              tags=worlddata.NVIDIA_TAGS.get(name, worlddata.DEFAULT_NVIDIA_TAGS),
              requires_dist=list(rel["requires"]), files=files,
              modes={p: 0o755 for p in files if ".so" in p}).write(dest or self.files)

    def meta_wheel(self, name: str, version: str) -> None:
        rel = release_of(self.dists[name], version)
        reqs = [f'{r}; extra == "{e}"' for e, r in sorted(rel["extras"].items())]
        Wheel(name=name, version=version, purelib=True, tags=["py3-none-any"], requires_dist=reqs,
              provides_extra=sorted(rel["extras"]), summary="CUDA Toolkit meta-package (test world)").write(self.files)

    def torch_wheel(self, build: dict, dest: Path | None = None) -> None:
        """The stand-in torch of `build` into dest (default: the index). The build's
        `preload_on_success` ("all" by default, or a list of folders) is how this stand-in loads."""
        version = build["version"]
        ext_suffix = sysconfig.get_config_var("EXT_SUFFIX")
        on_success = build.get("preload_on_success", "all")
        way = on_success if isinstance(on_success, str) else "-".join(on_success) or "none"
        stage = self.work / f"torch-{version}-{way}"
        items, ext = [], None
        for lib in build["libraries"]:
            rel = lib["file"].replace("{ext_suffix}", ext_suffix)
            if lib["soname"] is None:
                ext = (rel, lib)
                continue
            items.append((rel, lib["soname"], lib["needed"], f"venvfix-world torch {version} {lib['soname']}", lib["rpath"], None))
        files = self.lib_jobs(stage, items)
        if ext:
            rel, lib = ext
            self.elf.extension(stage / rel, "torch._C", sysconfig.get_paths()["include"], lib["needed"],
                               f"venvfix-world torch {version} _C", lib["rpath"])
            files[rel] = (stage / rel).read_bytes()
        pre = self.torch["preload"]
        init = (HERE / "torch_init.py.in").read_text()
        init = init.replace("@PRELOAD_SEARCH@", repr(pre["search"]))
        excluded = set(build.get("preload_exclude", []))
        init = init.replace("@PRELOAD_LIBS@", repr([(e["folder"], e["globs"], e["required"]) for e in pre["libraries"]
                                                    if e["folder"] not in excluded]))
        init = init.replace("@ON_SUCCESS@", repr(None if on_success == "all" else on_success))
        files["torch/__init__.py"] = init.encode()
        files["torch/version.py"] = (f"__version__ = {version!r}\ncuda = {build['cuda']!r}\ngit_version = 'venvfix-test-world'\n").encode()
        if self.big:
            files.update(self.big_payload(f"torch-{version}", stage, "torch"))
        tag = python_tag()
        Wheel(name="torch", version=version, purelib=False, tags=[f"{tag}-{tag}-manylinux_2_28_x86_64"],
              requires_dist=build["requires_dist"], provides_extra=build.get("provides_extra", []),
              requires_python=">=3.9", summary="Tensors and Dynamic neural networks (venvfix test-world stand-in)",
              files=files, modes={p: 0o755 for p in files if p.endswith(".so") or ".so." in p}).write(dest or self.files)

    def big_payload(self, label: str, stage: Path, package: str, py_files: int = 3000, elf_files: int = 35) -> dict[str, bytes]:
        """Many small Python files and extension-like ELF objects (the --big benchmark world)."""
        files = {}
        for i in range(py_files):
            files[f"{package}/_big/m{i // 100:03d}/f{i:05d}.py"] = f"# {label} {i}\nVALUE = {i}\n".encode()
        items = [(f"{package}/_big/ext/_e{i:03d}.so", None, ["libc.so.6"], f"venvfix-world {label} ext {i}", None, None)
                 for i in range(elf_files)]
        files.update(self.lib_jobs(stage, items))
        return files

    def stand_in(self, name: str, version: str, module: str, requires: list[str]) -> None:
        path = module.replace(".", "/") + "/__init__.py"
        files = {path: f'"""{name} {version}: venvfix test-world stand-in."""\n__version__ = {version!r}\n'.encode()}
        if "." in module:
            files[module.split(".")[0] + "/__init__.py"] = b""
        Wheel(name=name, version=version, purelib=True, tags=["py3-none-any"], requires_dist=requires,
              requires_python=">=3.9", files=files).write(self.files)

    def big_wheels(self) -> None:
        """About 8 extra pure-Python distributions of 3,000 files each plus ELF objects."""
        for i in range(8):
            name = f"bigdist{i}"
            stage = self.work / name
            files = self.big_payload(name, stage, name, py_files=3000, elf_files=40)
            Wheel(name=name, version="1.0", purelib=False, tags=[f"{python_tag()}-{python_tag()}-manylinux_2_28_x86_64"],
                  files=files, modes={p: 0o755 for p in files if p.endswith(".so")}).write(self.files)

    def run(self) -> None:
        try:
            for name, version in sorted(wanted_nvidia(self.dists, self.torch)):
                if self.dists[name].get("meta"):
                    self.meta_wheel(name, version)
                else:
                    self.nvidia_wheel(name, version)
            cuda13index.build(self, release_of)
            for build in world_builds(self.torch):
                self.torch_wheel(build)
            for name, version, module, requires in worlddata.STAND_INS:
                self.stand_in(name, version, module, requires)
            variants.build(self, self.out / "variants")
            if self.big:
                self.big_wheels()
            indexgen.build_index(self.out / "index")
            hermetic_cache(self.out / "hermetic" / "ld.so.cache")
        finally:
            self.pool.shutdown()
            shutil.rmtree(self.work, ignore_errors=True)


def hermetic_cache(out: Path) -> None:
    """ld.so.cache over the standard multiarch directories only (no /usr/local/cuda-*)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    conf = out.with_name("ld.so.conf")
    conf.write_text("".join(d + "\n" for d in HERMETIC_DIRS if os.path.isdir(d)))
    tmp = out.with_name(out.name + ".tmp")
    # -X: never touch the symlinks in the system directories; only write the cache file.
    subprocess.run(["ldconfig", "-X", "-C", str(tmp), "-f", str(conf)], check=True)
    tmp.replace(out)


def ensure_built(out: Path, big: bool) -> None:
    out = out.resolve()
    stamp = source_hash(big)
    with locked(out / ".lock"):
        stamp_file = out / STAMP
        if stamp_file.is_file() and stamp_file.read_text() == stamp:
            return
        for child in out.iterdir():
            if child.name != ".lock":
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        Builder(out, big).run()
        stamp_file.write_text(stamp)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="world.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build (or reuse) the world in DIR")
    b.add_argument("--out", required=True, type=Path)
    b.add_argument("--big", action="store_true", help="also build the ~30,000-file benchmark distributions and the 'big' scenario")
    s = sub.add_parser("scenario", help="copy scenario NAME's venv to VENV (building it once)")
    s.add_argument("name", choices=sorted(list(worlddata.SCENARIOS) + ["big"]))
    s.add_argument("--world", required=True, type=Path)
    s.add_argument("--out", required=True, type=Path)
    s.add_argument("--big", action="store_true", help="the world was built with --big")
    h = sub.add_parser("hermetic-cache", help="write an ld.so.cache without the host CUDA directories")
    h.add_argument("--out", required=True, type=Path)
    sub.add_parser("list-scenarios")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        ensure_built(args.out, args.big)
        print(args.out.resolve())
    elif args.cmd == "scenario":
        big = args.big or args.name == "big"
        ensure_built(args.world, big)
        scenarios.make(args.name, args.world.resolve(), args.out.resolve())
        print(args.out.resolve())
    elif args.cmd == "hermetic-cache":
        hermetic_cache(args.out.resolve())
    else:
        for name, text in worlddata.SCENARIOS.items():
            print(f"{name}\t{text}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except subprocess.CalledProcessError as e:
        print(f"world.py: command failed ({e.returncode}): {' '.join(map(str, e.cmd))}", file=sys.stderr)
        if e.stderr:
            print(e.stderr if isinstance(e.stderr, str) else e.stderr.decode(errors="replace"), file=sys.stderr)
        sys.exit(1)
