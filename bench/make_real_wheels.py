#!/usr/bin/env python3
"""Rebuilds NVIDIA's wheels from the CUDA 13 runtime installed on this machine, for the apply
benchmark on real bytes.

    bench/make_real_wheels.py OUT [--cuda-root /usr/local/cuda-13.0]
                                  [--dist nvidia_cudnn_cu13-9.19.0.56 ...]

The machine's CUDA 13 runtime was installed from NVIDIA's wheels and then copied flat: its
libraries sit in CUDA_ROOT/lib (and headers in CUDA_ROOT/include), and CUDA_ROOT/dist-info
keeps each wheel's installed dist-info, RECORD included. For each chosen distribution this
finds every RECORD path's file under CUDA_ROOT by its name and takes the one whose sha256 is
the RECORD's, so each member is NVIDIA's bytes, checked; a path that no file matches is an
error, never a stand-in. The wheel holds what the original held: the files of RECORD without
what pip adds on install (INSTALLER, REQUESTED, direct_url.json, __pycache__), and a RECORD
without those rows. Members are deflated (level 6) as the originals are; the archive's bytes
differ from NVIDIA's file (compressor, order), the installed files do not.

Writes OUT/files/*.whl and a PEP 503 page per project (OUT/simple/<name>/index.html with each
file's sha256), the layout bench/make_big_wheels.py writes.
"""
import argparse
import base64
import csv
import hashlib
import io
import os
import re
import shutil
import sys
import zipfile

DEFAULT_DISTS = ["nvidia_cudnn_cu13-9.19.0.56", "nvidia_cublas-13.1.0.3"]
ADDED_ON_INSTALL = {"INSTALLER", "REQUESTED", "direct_url.json"}


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
    return digest


def record_digest(path):
    return "sha256=" + base64.urlsafe_b64encode(sha256_of(path).digest()).rstrip(b"=").decode()


def files_by_name(cuda_root):
    """Every regular file under CUDA_ROOT outside dist-info/, by base name."""
    found = {}
    for directory, subdirs, names in os.walk(cuda_root):
        if os.path.relpath(directory, cuda_root).split(os.sep)[0] == "dist-info":
            subdirs[:] = []
            continue
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found.setdefault(name, []).append(path)
    return found


def source_of(row, dist_info, by_name):
    """The file whose bytes are RECORD's row, or an error naming the path."""
    path, expected = row[0], row[1]
    prefix = os.path.basename(dist_info) + "/"
    candidates = ([os.path.join(dist_info, path[len(prefix):])] if path.startswith(prefix)
                  else by_name.get(os.path.basename(path), []))
    for candidate in candidates:
        if os.path.isfile(candidate) and record_digest(candidate) == expected:
            return candidate
    sys.exit("make_real_wheels: no file under the CUDA root has the bytes RECORD gives for %s "
             "(%s; looked at %d)" % (path, expected, len(candidates)))


def wheel_tags(dist_info):
    with open(os.path.join(dist_info, "WHEEL"), encoding="utf-8") as wheel:
        return [line.split(":", 1)[1].strip() for line in wheel if line.startswith("Tag:")]


def build_wheel(out, dist_info, by_name):
    name_version = os.path.basename(dist_info)[: -len(".dist-info")]
    record_name = os.path.basename(dist_info) + "/RECORD"
    with open(os.path.join(dist_info, "RECORD"), newline="", encoding="utf-8") as record:
        rows = [row for row in csv.reader(record) if row]
    kept = [row for row in rows
            if os.path.basename(row[0]) not in ADDED_ON_INSTALL and "__pycache__" not in row[0]]
    tag = wheel_tags(dist_info)[0]
    wheel = "%s-%s.whl" % (name_version, tag)
    target = os.path.join(out, "files", wheel)
    with zipfile.ZipFile(target + ".part", "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for row in kept:
            if row[0] == record_name:
                continue
            source = source_of(row, dist_info, by_name)
            info = zipfile.ZipInfo.from_file(source, row[0])
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100755 if ".so" in row[0] else 0o100644) << 16
            with open(source, "rb") as data, archive.open(info, "w") as member:
                shutil.copyfileobj(data, member, 1 << 20)
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(kept)
        archive.writestr(zipfile.ZipInfo(record_name, (1980, 1, 1, 0, 0, 0)), text.getvalue(),
                         zipfile.ZIP_DEFLATED)
    os.replace(target + ".part", target)
    project = re.sub(r"[-_.]+", "-", name_version.rsplit("-", 1)[0]).lower()
    page = os.path.join(out, "simple", project)
    os.makedirs(page, exist_ok=True)
    with open(os.path.join(page, "index.html"), "w", encoding="utf-8") as index:
        index.write('<a href="../../files/%s#sha256=%s">%s</a>\n'
                    % (wheel, sha256_of(target).hexdigest(), wheel))
    print("%s: %d members, %.0f MB" % (wheel, len(kept), os.path.getsize(target) / 1e6))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--cuda-root", default="/usr/local/cuda-13.0")
    parser.add_argument("--dist", action="append", help="a dist-info name without .dist-info")
    args = parser.parse_args()
    dists = args.dist or DEFAULT_DISTS
    for sub in ("files", "simple"):
        shutil.rmtree(os.path.join(args.out, sub), ignore_errors=True)
        os.makedirs(os.path.join(args.out, sub))
    by_name = files_by_name(args.cuda_root)
    for dist in dists:
        dist_info = os.path.join(args.cuda_root, "dist-info", dist + ".dist-info")
        if not os.path.isdir(dist_info):
            sys.exit("make_real_wheels: %s does not exist" % dist_info)
        build_wheel(args.out, dist_info, by_name)


if __name__ == "__main__":
    main()
