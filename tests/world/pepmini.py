"""A small PEP 440 / 503 / 508 subset for the test-world tooling (standard library only).

Only what manifests/ and the world generator use: release-segment versions with an optional
local label (``2.8.0+cu128``), the operators ==, ==X.*, !=, >=, <=, >, <, ~=, and
requirements ``name[extras]specifiers; marker`` (the marker is kept as text).
Pre/post/dev releases are not supported and raise ValueError.
"""
from __future__ import annotations

import re

_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")
_VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)(?:\+([a-z0-9.]+))?$", re.I)


def normalize(name: str) -> str:
    """PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_version(text: str) -> tuple[tuple[int, ...], str]:
    m = _VERSION.match(text.strip())
    if not m:
        raise ValueError(f"unsupported version {text!r}")
    return tuple(int(p) for p in m.group(1).split(".")), (m.group(2) or "")


def _key(release: tuple[int, ...]) -> tuple[int, ...]:
    out = list(release)
    while len(out) > 1 and out[-1] == 0:
        out.pop()
    return tuple(out)


class Specifier:
    def __init__(self, text: str) -> None:
        m = re.match(r"^\s*(===|==|!=|>=|<=|~=|>|<)\s*([^\s]+)\s*$", text)
        if not m:
            raise ValueError(f"bad specifier {text!r}")
        self.op, self.version = m.group(1), m.group(2)
        self.prefix = self.version.endswith(".*")
        if self.prefix and self.op not in ("==", "!="):
            raise ValueError(f"'.*' only allowed with == and != in {text!r}")
        self.release, self.local = parse_version(self.version[:-2] if self.prefix else self.version)

    def contains(self, version: str) -> bool:
        rel, local = parse_version(version)
        if self.prefix:
            n = len(self.release)
            padded = rel + (0,) * max(0, n - len(rel))
            hit = padded[:n] == self.release
            return hit if self.op == "==" else not hit
        a, b = _key(rel), _key(self.release)
        if self.op in ("==", "==="):
            return a == b and (not self.local or local == self.local)
        if self.op == "!=":
            return not (a == b and (not self.local or local == self.local))
        if self.op == ">=":
            return a >= b
        if self.op == "<=":
            return a <= b
        if self.op == ">":
            return a > b
        if self.op == "<":
            return a < b
        # ~=: >= V and == V[:-1].*
        if len(self.release) < 2:
            raise ValueError("~= needs at least two release segments")
        return a >= b and rel[: len(self.release) - 1] == self.release[:-1]


class SpecifierSet:
    def __init__(self, text: str) -> None:
        parts = [p for p in text.split(",") if p.strip()]
        self.specs = [Specifier(p) for p in parts]

    def contains(self, version: str) -> bool:
        return all(s.contains(version) for s in self.specs)

    def __str__(self) -> str:
        return ",".join(f"{s.op}{s.version}" for s in self.specs)


class Requirement:
    def __init__(self, text: str) -> None:
        req, _, marker = text.partition(";")
        self.marker = marker.strip()
        m = _NAME.match(req.strip())
        if not m:
            raise ValueError(f"bad requirement {text!r}")
        self.name = normalize(m.group(1))
        self.extras = [e.strip() for e in (m.group(2) or "[]")[1:-1].split(",") if e.strip()]
        self.specifier = SpecifierSet(m.group(3).strip().strip("()"))

    def pinned_version(self) -> str | None:
        """The version of a single == pin (``==13.1.0.3.*`` gives ``13.1.0.3``), else None."""
        if len(self.specifier.specs) != 1 or self.specifier.specs[0].op != "==":
            return None
        return self.specifier.specs[0].version.removesuffix(".*")
