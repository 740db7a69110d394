"""Real wheel files (PEP 427): a zip with *.dist-info/METADATA, WHEEL and RECORD (sha256, size).

Entries are written in a fixed order with a fixed timestamp, so a wheel built twice from the
same inputs has the same bytes (and the index the same hashes).
"""
from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

_EPOCH = (1980, 1, 1, 0, 0, 0)


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def escape_name(name: str) -> str:
    """Wheel file-name escaping of a distribution name (PEP 427 / binary distribution format)."""
    return re.sub(r"[-_.]+", "_", name).lower()


@dataclass
class Wheel:
    name: str                       # distribution name as in METADATA
    version: str
    tags: list[str]                 # e.g. ["py3-none-manylinux_2_27_x86_64"]
    purelib: bool
    requires_dist: list[str] = field(default_factory=list)
    provides_extra: list[str] = field(default_factory=list)
    summary: str = "venvfix test world stand-in"
    requires_python: str | None = ">=3"
    files: dict[str, bytes] = field(default_factory=dict)   # path in wheel -> content
    modes: dict[str, int] = field(default_factory=dict)     # path -> unix mode

    @property
    def dist_info(self) -> str:
        return f"{escape_name(self.name)}-{self.version}.dist-info"

    def filename(self) -> str:
        # Compressed tag set: py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64
        pys, abis, plats = [], [], []
        for t in self.tags:
            py, abi, plat = t.split("-")
            for lst, v in ((pys, py), (abis, abi), (plats, plat)):
                if v not in lst:
                    lst.append(v)
        tag = "-".join(".".join(x) for x in (pys, abis, plats))
        return f"{escape_name(self.name)}-{self.version}-{tag}.whl"

    def metadata(self) -> bytes:
        lines = ["Metadata-Version: 2.1", f"Name: {self.name}", f"Version: {self.version}", f"Summary: {self.summary}"]
        if self.requires_python:
            lines.append(f"Requires-Python: {self.requires_python}")
        lines += [f"Requires-Dist: {r}" for r in self.requires_dist if "extra ==" not in r]
        for e in self.provides_extra:
            lines.append(f"Provides-Extra: {e}")
            lines += [f"Requires-Dist: {r}" for r in self.requires_dist if f'extra == "{e}"' in r]
        return ("\n".join(lines) + "\n").encode()

    def wheel_file(self) -> bytes:
        lines = ["Wheel-Version: 1.0", "Generator: venvfix-test-world (1.0)",
                 f"Root-Is-Purelib: {'true' if self.purelib else 'false'}"] + [f"Tag: {t}" for t in self.tags]
        return ("\n".join(lines) + "\n").encode()

    def write(self, directory: Path) -> Path:
        """Writes the wheel and its PEP 658 `<wheel>.metadata` beside it; returns the wheel path."""
        out = directory / self.filename()
        meta = self.metadata()
        entries = dict(sorted(self.files.items()))
        entries[f"{self.dist_info}/METADATA"] = meta
        entries[f"{self.dist_info}/WHEEL"] = self.wheel_file()
        rows = [f"{p},{record_hash(d)},{len(d)}" for p, d in entries.items()]
        rows.append(f"{self.dist_info}/RECORD,,")
        entries[f"{self.dist_info}/RECORD"] = ("\n".join(_csv(r) for r in rows) + "\n").encode()
        tmp = out.with_name(out.name + ".tmp")
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
            for path, data in entries.items():
                info = zipfile.ZipInfo(path, date_time=_EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = (self.modes.get(path, 0o644) | 0o100000) << 16
                z.writestr(info, data)
        tmp.replace(out)
        (directory / (out.name + ".metadata")).write_bytes(meta)
        return out


def _csv(row: str) -> str:
    path, rest = row.split(",", 1)
    if any(c in path for c in ',"\n'):
        path = '"' + path.replace('"', '""') + '"'
    return f"{path},{rest}"
