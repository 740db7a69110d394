"""A static PEP 503 (HTML) + PEP 691 (JSON) simple index over a directory of wheels.

Layout under ROOT (the index dir):
  files/<wheel>, files/<wheel>.metadata       (PEP 658/714 metadata beside each wheel)
  files/<wheel>.yanked                         (optional: the wheel is yanked, PEP 592, for this reason)
  files/<sdist>.tar.gz                         (sdists: listed, no metadata; the CUDA 13 stubs)
  simple/index.html, simple/index.json
  simple/<normalized>/index.html, simple/<normalized>/index.json
index_server.py serves it and picks HTML or JSON by the Accept header.
"""
from __future__ import annotations

import hashlib
import html
import json
import re
import tarfile
import urllib.parse
import zipfile
from pathlib import Path

from pepmini import normalize


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _dist_name(wheel: Path) -> tuple[str, str, str | None]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if re.match(r"[^/]+\.dist-info/METADATA$", n))
        text = z.read(meta).decode()
    name = re.search(r"^Name: (.+)$", text, re.M).group(1).strip()
    version = re.search(r"^Version: (.+)$", text, re.M).group(1).strip()
    rp = re.search(r"^Requires-Python: (.+)$", text, re.M)
    return name, version, rp.group(1).strip() if rp else None


def _sdist_name(sdist: Path) -> tuple[str, str, str | None]:
    with tarfile.open(sdist) as t:
        member = next(m for m in t.getmembers() if re.match(r"[^/]+/PKG-INFO$", m.name))
        text = t.extractfile(member).read().decode()
    name = re.search(r"^Name: (.+)$", text, re.M).group(1).strip()
    version = re.search(r"^Version: (.+)$", text, re.M).group(1).strip()
    return name, version, None


def build_index(root: Path) -> None:
    files = root / "files"
    simple = root / "simple"
    simple.mkdir(parents=True, exist_ok=True)
    projects: dict[str, list[dict]] = {}
    versions: dict[str, set[str]] = {}
    for wheel in sorted(list(files.glob("*.whl")) + list(files.glob("*.tar.gz"))):
        is_wheel = wheel.suffix == ".whl"
        name, version, requires_python = _dist_name(wheel) if is_wheel else _sdist_name(wheel)
        key = normalize(name)
        entry = {
            "filename": wheel.name,
            "url": "../../files/" + urllib.parse.quote(wheel.name),
            "hashes": {"sha256": _sha256(wheel)},
            "requires-python": requires_python,
        }
        if is_wheel:
            meta_hash = _sha256(wheel.with_name(wheel.name + ".metadata"))
            entry["core-metadata"] = {"sha256": meta_hash}
            entry["dist-info-metadata"] = {"sha256": meta_hash}
        yanked = wheel.with_name(wheel.name + ".yanked")
        if yanked.exists():
            entry["yanked"] = yanked.read_text().strip() or True
        entry["size"] = wheel.stat().st_size
        projects.setdefault(key, []).append(entry)
        versions.setdefault(key, set()).add(version)
    meta = {"api-version": "1.1"}
    links = "".join(f'    <a href="{p}/">{p}</a>\n' for p in sorted(projects))
    (simple / "index.html").write_text(
        f"<!DOCTYPE html>\n<html>\n  <head><meta name=\"pypi:repository-version\" content=\"1.1\"><title>Simple index</title></head>\n  <body>\n{links}  </body>\n</html>\n")
    (simple / "index.json").write_text(json.dumps({"meta": meta, "projects": [{"name": p} for p in sorted(projects)]}, indent=1))
    for key, entries in projects.items():
        d = simple / key
        d.mkdir(exist_ok=True)
        rows = []
        for e in entries:
            attrs = f'href="{e["url"]}#sha256={e["hashes"]["sha256"]}"'
            if e["requires-python"]:
                attrs += f' data-requires-python="{html.escape(e["requires-python"])}"'
            if "core-metadata" in e:
                attrs += f' data-dist-info-metadata="sha256={e["core-metadata"]["sha256"]}"'
                attrs += f' data-core-metadata="sha256={e["core-metadata"]["sha256"]}"'
            if "yanked" in e:
                reason = e["yanked"] if isinstance(e["yanked"], str) else ""
                attrs += f' data-yanked="{html.escape(reason)}"'
            rows.append(f'    <a {attrs}>{html.escape(e["filename"])}</a><br/>\n')
        (d / "index.html").write_text(
            f"<!DOCTYPE html>\n<html>\n  <head><meta name=\"pypi:repository-version\" content=\"1.1\"><title>Links for {key}</title></head>\n  <body>\n    <h1>Links for {key}</h1>\n{''.join(rows)}  </body>\n</html>\n")
        (d / "index.json").write_text(json.dumps({"meta": meta, "name": key, "versions": sorted(versions[key]),
                                                  "files": entries}, indent=1))
