#!/usr/bin/env python3
"""Validate manifests/*.json (schema keys, non-overlapping release ranges, torch pins).

Usage: python3 tests/world/check_manifests.py [MANIFEST_DIR]
Exit 0 when valid; otherwise prints one line per problem (file and entry) and exits 1.
Python 3.11 standard library only.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pepmini  # noqa: E402

NON_NATIVE = {"triton", "cuda-bindings", "filelock", "typing-extensions", "setuptools", "sympy",
              "networkx", "jinja2", "fsspec", "opt-einsum", "optree", "pyyaml"}
LABEL = re.compile(r"\[(V|V2|P|U)\b")


class Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def fail(self, where: str, what: str) -> None:
        self.problems.append(f"{where}: {what}")

    def keys(self, where: str, obj: object, required: dict[str, type], optional: dict[str, type] | None = None) -> bool:
        if not isinstance(obj, dict):
            self.fail(where, "is not a JSON object")
            return False
        allowed = dict(required, **(optional or {}))
        for key, typ in required.items():
            if key not in obj:
                self.fail(where, f"missing key '{key}'")
            elif not isinstance(obj[key], typ):
                self.fail(where, f"key '{key}' has the wrong type")
        for key in obj:
            if key not in allowed:
                self.fail(where, f"unknown key '{key}'")
            elif key in (optional or {}) and not isinstance(obj[key], allowed[key]):
                self.fail(where, f"key '{key}' has the wrong type")
        return True

    def source(self, where: str, text: object) -> None:
        if not isinstance(text, str) or "§" not in text or not LABEL.search(text):
            self.fail(where, "source must cite a reference section (§) and a confidence label ([V], [V2], [P] or [U])")


def probe_versions(spec: pepmini.SpecifierSet) -> list[str]:
    """Versions at every boundary of a specifier set (and just around it) for overlap tests."""
    out = []
    for s in spec.specs:
        base = s.version.rstrip(".*")
        parts = [int(p) for p in base.split(".") if p.isdigit()]
        out.append(base)
        for i in range(len(parts)):
            bumped = parts[: i + 1]
            bumped[-1] += 1
            out.append(".".join(map(str, bumped)))
            if bumped[-1] > 1:
                lowered = parts[: i + 1]
                lowered[-1] -= 1
                out.append(".".join(map(str, lowered)) + ".999")
        out.append(base + ".0.1")
    return out


def check_nvidia(c: Checker, doc: dict) -> dict[str, dict]:
    f = "manifests/nvidia-wheels.json"
    c.keys(f, doc, {"schema": str, "updated": str, "distributions": list})
    if doc.get("schema") != "venvfix-manifest-nvidia/1":
        c.fail(f, "schema must be venvfix-manifest-nvidia/1")
    by_name: dict[str, dict] = {}
    placeholders: dict[str, str] = {}
    lib_key = {"soname": str, "file": str, "needed": list}
    lib_opt = {"runpath": str, "rpath": str, "dlopens": list}
    for i, d in enumerate(doc.get("distributions", [])):
        w = f"{f} distributions[{i}] ({d.get('name', '?') if isinstance(d, dict) else '?'})"
        meta = isinstance(d, dict) and d.get("meta") is True
        if meta:
            c.keys(w, d, {"name": str, "meta": bool, "source": str, "releases": list})
        else:
            c.keys(w, d, {"name": str, "cuda_major": int, "lib_dir": str, "preload_folder": (str, type(None)),
                          "source": str, "releases": list}, {"placeholders": list})
            for k, ph in enumerate(d.get("placeholders", []) if isinstance(d, dict) else []):
                pw = f"{w} placeholders[{k}]"
                if c.keys(pw, ph, {"name": str, "source": str}):
                    c.source(pw, ph.get("source"))
                    placeholders[ph.get("name")] = pw
        if not isinstance(d, dict):
            continue
        c.source(w, d.get("source"))
        name = d.get("name", "")
        if pepmini.normalize(name) != name:
            c.fail(w, "name is not PEP 503 normalised")
        if name in by_name:
            c.fail(w, "duplicate distribution")
        by_name[name] = d
        specs = []
        for j, r in enumerate(d.get("releases", [])):
            rw = f"{w} releases[{j}]"
            if meta:
                c.keys(rw, r, {"versions": str, "cuda_major": int, "extras": dict, "source": str})
            else:
                c.keys(rw, r, {"versions": str, "libraries": list, "requires": list, "source": str})
            if not isinstance(r, dict):
                continue
            c.source(rw, r.get("source"))
            try:
                specs.append((j, pepmini.SpecifierSet(r.get("versions", ""))))
            except ValueError as e:
                c.fail(rw, f"bad version specifier: {e}")
            for k, lib in enumerate(r.get("libraries", [])):
                lw = f"{rw} libraries[{k}]"
                c.keys(lw, lib, lib_key, lib_opt)
                if isinstance(lib, dict) and "rpath" in lib and "runpath" in lib:
                    c.fail(lw, "has both rpath and runpath")
            for extra, req in (r.get("extras") or {}).items():
                try:
                    pepmini.Requirement(req)
                except ValueError as e:
                    c.fail(f"{rw} extras.{extra}", str(e))
        # Releases must not overlap: probe every boundary version against every other range.
        for a in range(len(specs)):
            for b in range(a + 1, len(specs)):
                ja, sa = specs[a]
                jb, sb = specs[b]
                for v in probe_versions(sa) + probe_versions(sb):
                    if sa.contains(v) and sb.contains(v):
                        c.fail(w, f"releases[{ja}] and releases[{jb}] overlap (both contain {v})")
                        break
    # A placeholder (a source-only stub name) is never a distribution of the manifest.
    for ph, pw in placeholders.items():
        if ph in by_name or pepmini.normalize(ph) != ph:
            c.fail(pw, f"placeholder {ph} is a distribution of the manifest or not normalised")
    # Meta-package extras must name distributions of the manifest.
    for d in by_name.values():
        for r in d.get("releases", []) if d.get("meta") else []:
            for extra, req in r.get("extras", {}).items():
                n = pepmini.Requirement(req).name
                if n not in by_name:
                    c.fail(f"{f} {d['name']} {r['versions']} extras.{extra}", f"names unknown distribution {n}")
    return by_name


def release_for(dist: dict, version: str) -> dict | None:
    hits = [r for r in dist.get("releases", []) if pepmini.SpecifierSet(r["versions"]).contains(version)]
    return hits[0] if len(hits) == 1 else None


def check_system(c: Checker, doc: dict) -> None:
    f = "manifests/system-libraries.json"
    c.keys(f, doc, {"schema": str, "updated": str, "libraries": list, "patterns": list})
    if doc.get("schema") != "venvfix-manifest-system/1":
        c.fail(f, "schema must be venvfix-manifest-system/1")
    seen = set()
    for i, e in enumerate(doc.get("libraries", [])):
        w = f"{f} libraries[{i}]"
        c.keys(w, e, {"soname": str, "provider": str, "source": str}, {"confidence": str})
        if isinstance(e, dict):
            c.source(w, e.get("source"))
            if e.get("provider") not in ("system", "driver"):
                c.fail(w, "provider must be system or driver")
            if e.get("soname") in seen:
                c.fail(w, "duplicate soname")
            seen.add(e.get("soname"))
    for i, e in enumerate(doc.get("patterns", [])):
        w = f"{f} patterns[{i}]"
        c.keys(w, e, {"glob": str, "provider": str, "source": str}, {"confidence": str})


def check_torch(c: Checker, doc: dict, nvidia: dict[str, dict]) -> None:
    f = "manifests/torch.json"
    c.keys(f, doc, {"schema": str, "updated": str, "preload": dict, "builds": list}, {"builds_note": str})
    if doc.get("schema") != "venvfix-manifest-torch/1":
        c.fail(f, "schema must be venvfix-manifest-torch/1")
    pre = doc.get("preload", {})
    c.keys(f"{f} preload", pre, {"source": str, "search": list, "libraries": list}, {"rules": list})
    folders = {d.get("preload_folder") for d in nvidia.values()}
    for i, rule in enumerate(pre.get("rules", [])):
        w = f"{f} preload.rules[{i}]"
        c.keys(w, rule, {"torch": str, "on_success": list, "source": str}, {"exclude": list})
        for way in rule.get("on_success", []) if isinstance(rule, dict) else []:
            if way != "all" and not (isinstance(way, list) and set(way) <= folders):
                c.fail(w, f"a way must be \"all\" or a list of preload folders, not {way!r}")
    versions: set[str] = set()
    for i, e in enumerate(pre.get("libraries", [])):
        w = f"{f} preload.libraries[{i}]"
        c.keys(w, e, {"folder": str, "globs": list, "required": bool})
        if isinstance(e, dict) and e.get("folder") not in folders:
            c.fail(w, f"folder {e.get('folder')} is no distribution's preload_folder")
    for i, b in enumerate(doc.get("builds", [])):
        w = f"{f} builds[{i}] ({b.get('version', '?') if isinstance(b, dict) else '?'})"
        # A build without `libraries` is data only: the test world does not build it.
        c.keys(w, b, {"version": str, "cuda": str, "source": str, "requires_dist": list},
               {"libraries": list, "provides_extra": list, "preload_exclude": list,
                "preload_on_success": (str, list), "preload_source": str, "pypi_default": bool,
                "unverified": list, "unknown": str})
        if not isinstance(b, dict):
            continue
        c.source(w, b.get("source"))
        if b.get("version") in versions:
            c.fail(w, "duplicate build")
        versions.add(b.get("version"))
        major = int(b.get("cuda", "0").split(".")[0])
        names = set()
        for req_text in b.get("requires_dist", []):
            try:
                names.add(pepmini.Requirement(req_text).name)
            except ValueError:
                pass
        for name in b.get("unverified", []):
            if name not in names:
                c.fail(w, f"unverified names {name}, which no Requires-Dist line pins")
        for req_text in b.get("requires_dist", []):
            try:
                req = pepmini.Requirement(req_text)
            except ValueError as e:
                c.fail(w, f"bad Requires-Dist {req_text!r}: {e}")
                continue
            if req.name in NON_NATIVE:
                continue
            dist = nvidia.get(req.name)
            if dist is None:
                c.fail(w, f"pin {req.name} names no distribution of nvidia-wheels.json")
                continue
            pinned = req.pinned_version()
            if pinned is None and not dist.get("meta"):
                # A range (torch 2.12: nvidia-cublas>=13.1.0.3,<=13.1.1.3): its bounds must
                # fall in one release of the right CUDA major.
                bounds = [s.version for s in req.specifier.specs if s.op in (">=", "<=", "==")]
                if not bounds or any(release_for(dist, v) is None for v in bounds):
                    c.fail(w, f"range {req_text!r} has a bound in no release of the manifest")
                if dist["cuda_major"] != major:
                    c.fail(w, f"pin {req.name} is CUDA {dist['cuda_major']}, build is CUDA {major}")
                continue
            if pinned is None:
                c.fail(w, f"pin {req_text!r} is not an == pin")
                continue
            if dist.get("meta"):
                rel = release_for(dist, pinned)
                if rel is None:
                    c.fail(w, f"{req.name}=={pinned} matches no single meta release")
                    continue
                for extra in req.extras:
                    if extra not in rel["extras"]:
                        c.fail(w, f"{req.name}=={pinned} has no extra {extra}")
                        continue
                    sub = pepmini.Requirement(rel["extras"][extra])
                    sd = nvidia.get(sub.name)
                    if sd is None or sd["cuda_major"] != major:
                        c.fail(w, f"extra {extra} -> {sub.name} is not a CUDA {major} distribution")
                    elif release_for(sd, sub.pinned_version()) is None:
                        c.fail(w, f"{sub.name}=={sub.pinned_version()} matches no single release")
                continue
            if dist["cuda_major"] != major:
                c.fail(w, f"pin {req.name} is CUDA {dist['cuda_major']}, build is CUDA {major}")
            if release_for(dist, pinned) is None:
                c.fail(w, f"{req.name}=={pinned} matches no single release of the manifest")
        for k, lib in enumerate(b.get("libraries", [])):
            lw = f"{w} libraries[{k}]"
            c.keys(lw, lib, {"file": str, "soname": (str, type(None)), "needed": list, "rpath": str, "source": str})


def main(argv: list[str]) -> int:
    mdir = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2] / "manifests"
    c = Checker()
    docs = {}
    for name in ("nvidia-wheels.json", "system-libraries.json", "torch.json"):
        try:
            docs[name] = json.loads((mdir / name).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            print(f"manifests/{name}: cannot be read as JSON: {e}")
            return 1
    nvidia = check_nvidia(c, docs["nvidia-wheels.json"])
    check_system(c, docs["system-libraries.json"])
    check_torch(c, docs["torch.json"], nvidia)
    for p in c.problems:
        print(p)
    return 1 if c.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
