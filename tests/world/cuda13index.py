"""CUDA 13 as the index serves it now (worlddata.CUDA13_VERSIONS, CUDA13_STUBS): extra
versions of the unsuffixed toolkit wheels beside the pinned ones, and the suffixed `-cu13`
names of the toolkit components as sdist-only 0.0.1 stubs whose build fails."""
from __future__ import annotations

import gzip
import io
import re
import tarfile
from pathlib import Path

import worlddata
from wheelgen import Wheel

_EPOCH = 315532800  # 1980-01-01, as the wheels
_RELEASE = re.compile(r"^\d+(?:\.\d+)*")


def _release_version(version: str) -> str:
    """The release segment of `version` (pepmini knows no pre-releases): 13.0.96.1rc1 -> 13.0.96.1."""
    return _RELEASE.match(version).group(0)


def extra_wheel(builder, release_of, name: str, version: str, tags: list[str] | None, yanked: str | None) -> None:
    dist = builder.dists[name]
    release = release_of(dist, _release_version(version))
    stage = builder.work / f"{name}-{version}"
    items = [(f"{dist['lib_dir']}/{lib['file']}", lib["soname"], lib["needed"],
              f"venvfix-world {name} {version} {lib['soname']}", lib.get("rpath"), lib.get("runpath"))
             for lib in release["libraries"]]
    files = builder.lib_jobs(stage, items)
    wheel = Wheel(name=name, version=version, purelib=True,
                  tags=tags or worlddata.NVIDIA_TAGS.get(name, worlddata.DEFAULT_NVIDIA_TAGS),
                  requires_dist=list(release["requires"]), files=files,
                  modes={p: 0o755 for p in files if ".so" in p}).write(builder.files)
    if yanked:
        wheel.with_name(wheel.name + ".yanked").write_text(yanked)


def _add(tar: tarfile.TarFile, path: str, data: bytes) -> None:
    info = tarfile.TarInfo(path)
    info.size, info.mtime, info.mode = len(data), _EPOCH, 0o644
    tar.addfile(info, io.BytesIO(data))


def stub_sdist(files: Path, name: str, version: str) -> None:
    """An sdist whose build exits with an error, as the real 0.0.1 stubs do."""
    base = f"{re.sub(r'[-_.]+', '_', name)}-{version}"
    pkg_info = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: stub (venvfix test world)\n".encode()
    setup = (f"import sys\nsys.exit('{name} {version} is a placeholder: the CUDA 13 component is "
             f"published without the -cu13 suffix')\n").encode()
    out = files / f"{base}.tar.gz"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add(tar, f"{base}/PKG-INFO", pkg_info)
        _add(tar, f"{base}/setup.py", setup)
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", mtime=0) as gz:  # same bytes every build
        gz.write(raw.getvalue())
    out.write_bytes(packed.getvalue())


def build(builder, release_of) -> None:
    """Adds the wheels and sdists to builder.files (world.Builder; release_of: world.release_of)."""
    for name, version, tags, yanked in worlddata.CUDA13_VERSIONS:
        extra_wheel(builder, release_of, name, version, tags, yanked)
    for name in worlddata.CUDA13_STUBS:
        stub_sdist(builder.files, name, worlddata.STUB_VERSION)
