"""Builds the wheels of the wheel tests with zipfile: one well-formed wheel that uses every part
of the install scheme, and hostile ones. Usage: make_wheels.py OUT_DIR"""
import base64
import csv
import io
import hashlib
import os
import stat
import sys
import zipfile

OUT = sys.argv[1]


def digest(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def csv_row(path, data):
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([path, f"sha256={digest(data)}", len(data)])
    return out.getvalue()


def info(name, path, mode=0o644, kind=stat.S_IFREG):
    z = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
    z.create_system = 3
    z.external_attr = (kind | mode) << 16
    z.compress_type = zipfile.ZIP_DEFLATED
    return z


def build(filename, files, name="demo_pkg", version="1.0", record=None, extra=None,
          wheel_text=None, modes=None, kinds=None):
    """files: {path: bytes}; dist-info METADATA/WHEEL added unless given; RECORD computed
    unless `record` (a function of the computed rows) changes it; `extra` members are written
    after RECORD without a row."""
    dist_info = f"{name}-{version}.dist-info"
    files = dict(files)
    files.setdefault(f"{dist_info}/METADATA",
                     f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n".encode())
    files.setdefault(f"{dist_info}/WHEEL", (wheel_text or
                     "Wheel-Version: 1.0\nGenerator: venvfix-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n").encode())
    rows = [csv_row(p, d) for p, d in files.items()]
    rows.append(f"{dist_info}/RECORD,,")
    if record:
        rows = record(rows)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(
        next(csv.reader([r])) for r in rows)
    files[f"{dist_info}/RECORD"] = out.getvalue().encode()
    modes = modes or {}
    kinds = kinds or {}
    os.makedirs(os.path.dirname(os.path.join(OUT, filename)), exist_ok=True)
    with zipfile.ZipFile(os.path.join(OUT, filename), "w") as z:
        for path, data in list(files.items()) + list((extra or {}).items()):
            z.writestr(info(name, path, modes.get(path, 0o644), kinds.get(path, stat.S_IFREG)), data)


D = "demo_pkg-1.0.data"
demo_files = {
    "demo_pkg/__init__.py": b"VERSION = '1.0'\n",
    "demo_pkg/cli.py": b"def main():\n    return 0\n\ndef gui():\n    return 0\n",
    "demo_pkg/tool.sh": b"#!/bin/sh\necho tool\n",
    "demo_pkg/data, with comma.txt": b"quoted in RECORD\n",
    f"{D}/scripts/demo-script": b"#!python -u\nprint('hello')\n",
    f"{D}/scripts/plain-script": b"#!/bin/sh\necho plain\n",
    f"{D}/scripts/democli-script.py": b"# setuptools wrapper, skipped by pip\n",
    f"{D}/data/share/demo/data.txt": b"data file\n",
    f"{D}/headers/demo.h": b"#define DEMO 1\n",
    f"{D}/purelib/demo_extra.py": b"EXTRA = 1\n",
    "demo_pkg-1.0.dist-info/entry_points.txt":
        b"[console_scripts]\ndemocli = demo_pkg.cli:main\ndemo-tool = demo_pkg.cli:main [extra]\n"
        b"\n[gui_scripts]\ndemogui = demo_pkg.cli:gui\n\n[other.group]\nx = y:z\n",
}
build("demo_pkg-1.0-py3-none-any.whl", demo_files,
      modes={"demo_pkg/tool.sh": 0o755, f"{D}/scripts/demo-script": 0o755})

plain = {"demo_pkg/__init__.py": b"x = 1\n"}
build("traversal/demo_pkg-1.0-py3-none-any.whl", {**plain, "demo_pkg/../../evil.py": b"evil\n"})
build("absolute/demo_pkg-1.0-py3-none-any.whl", {**plain, "/tmp/venvfix-evil.py": b"evil\n"})
build("backslash/demo_pkg-1.0-py3-none-any.whl", {**plain, "demo_pkg\\evil.py": b"evil\n"})
build("symlink/demo_pkg-1.0-py3-none-any.whl", {**plain, "demo_pkg/link": b"/etc/passwd"},
      modes={"demo_pkg/link": 0o777}, kinds={"demo_pkg/link": stat.S_IFLNK})
build("data-traversal/demo_pkg-1.0-py3-none-any.whl", {**plain, f"{D}/data/../../../../evil": b"e\n"})
build("unknown-key/demo_pkg-1.0-py3-none-any.whl", {**plain, f"{D}/nowhere/x": b"e\n"})
build("not-in-record/demo_pkg-1.0-py3-none-any.whl", plain, extra={"demo_pkg/extra.py": b"e\n"})
build("record-only/demo_pkg-1.0-py3-none-any.whl", plain,
      record=lambda rows: rows + [f"demo_pkg/ghost.py,sha256={digest(b'g')},1"])
build("wrong-hash/demo_pkg-1.0-py3-none-any.whl", {**plain, "demo_pkg/big.py": b"a" * 5000},
      record=lambda rows: [r.replace(digest(b"a" * 5000), digest(b"b" * 5000)) for r in rows])
build("wrong-size/demo_pkg-1.0-py3-none-any.whl", plain,
      record=lambda rows: [r.replace(",6", ",7") if r.startswith("demo_pkg/__init__") else r
                           for r in rows])
build("wrong-name/demo_pkg-1.0-py3-none-any.whl", plain, name="other_pkg")
build("wheel-version/demo_pkg-1.0-py3-none-any.whl", plain,
      wheel_text="Wheel-Version: 2.0\nRoot-Is-Purelib: true\n")
build("bad-entry-point/demo_pkg-1.0-py3-none-any.whl",
      {**plain, "demo_pkg-1.0.dist-info/entry_points.txt": b"[console_scripts]\nx = nocallable\n"})

# Duplicate entry: zipfile warns but writes both.
import warnings
warnings.simplefilter("ignore")
build("duplicate/demo_pkg-1.0-py3-none-any.whl", plain, extra={"demo_pkg/__init__.py": b"y = 2\n"})

# Zip bomb: 100 MiB of zeros, ~100 KiB compressed, recorded honestly.
zeros = bytes(100 << 20)
build("bomb/demo_pkg-1.0-py3-none-any.whl", {**plain, "demo_pkg/zeros.bin": zeros})

# Truncated and corrupt archives, from the good demo wheel.
good = open(os.path.join(OUT, "demo_pkg-1.0-py3-none-any.whl"), "rb").read()
os.makedirs(os.path.join(OUT, "truncated"), exist_ok=True)
open(os.path.join(OUT, "truncated/demo_pkg-1.0-py3-none-any.whl"), "wb").write(good[: len(good) // 2])
cd = good.rfind(b"PK\x01\x02")
corrupt = bytearray(good)
corrupt[cd + 10: cd + 30] = b"\xff" * 20  # method, time, crc, sizes of the last central entry
os.makedirs(os.path.join(OUT, "corrupt-cd"), exist_ok=True)
open(os.path.join(OUT, "corrupt-cd/demo_pkg-1.0-py3-none-any.whl"), "wb").write(bytes(corrupt))
os.makedirs(os.path.join(OUT, "not-zip"), exist_ok=True)
open(os.path.join(OUT, "not-zip/demo_pkg-1.0-py3-none-any.whl"), "wb").write(b"this is not a zip\n" * 10)
