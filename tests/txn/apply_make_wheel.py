"""Builds one wheel for the apply tests from a directory tree, with a correct RECORD.

Usage: apply_make_wheel.py OUT_DIR NAME VERSION SRC_DIR [--purelib] [--requires REQ]...
Writes OUT_DIR/<name>-<version>-py3-none-any.whl and prints its path, sha256 and size.
Member names are SRC_DIR's relative paths as they are ("../evil" cannot come from a tree, so
hostile names are given with --raw NAME=TEXT)."""
import base64
import csv
import hashlib
import io
import os
import sys
import zipfile


def digest(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main():
    out_dir, name, version, src = sys.argv[1:5]
    purelib = "--purelib" in sys.argv[5:]
    requires, raw = [], {}
    args = sys.argv[5:]
    for i, arg in enumerate(args):
        if arg == "--requires":
            requires.append(args[i + 1])
        if arg == "--raw":
            key, _, text = args[i + 1].partition("=")
            raw[key] = text.encode()
    stem = name.replace("-", "_")
    dist_info = f"{stem}-{version}.dist-info"
    files = {}
    for root, _, names in os.walk(src):
        for n in sorted(names):
            full = os.path.join(root, n)
            rel = os.path.relpath(full, src).replace(os.sep, "/")
            with open(full, "rb") as f:
                files[rel] = (f.read(), os.stat(full).st_mode & 0o777)
    for key, data in raw.items():
        files[key] = (data, 0o644)
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files[f"{dist_info}/METADATA"] = (meta.encode(), 0o644)
    files[f"{dist_info}/WHEEL"] = ((
        "Wheel-Version: 1.0\nGenerator: venvfix-test\nRoot-Is-Purelib: %s\nTag: py3-none-any\n"
        % ("true" if purelib else "false")).encode(), 0o644)
    rows = io.StringIO()
    writer = csv.writer(rows, lineterminator="\n")
    for path, (data, _) in files.items():
        writer.writerow([path, "sha256=" + digest(data), len(data)])
    writer.writerow([f"{dist_info}/RECORD", "", ""])
    files[f"{dist_info}/RECORD"] = (rows.getvalue().encode(), 0o644)
    os.makedirs(out_dir, exist_ok=True)
    wheel = os.path.join(out_dir, f"{stem}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(wheel, "w") as z:
        for path, (data, mode) in files.items():
            info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            info.create_system = 3
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    with open(wheel, "rb") as f:
        data = f.read()
    print(wheel, hashlib.sha256(data).hexdigest(), len(data))


main()
