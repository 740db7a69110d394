#!/usr/bin/env python3
"""Writes a plan's worth of large, NVIDIA-like wheels for the unpack and apply benchmarks.

    bench/make_big_wheels.py OUT [--total-mb 1500] [--wheels 6] [--small-files 3000] [--seed N]
    bench/make_big_wheels.py OUT --big-member-mb 2048

With --big-member-mb, one wheel instead (benchbig00) whose library is a single member of that
many MB, beside 100 small files: what bounded memory is measured with.

OUT/files/*.whl and a PEP 503 page per project (OUT/simple/<name>/index.html with each file's
sha256), the layout tests/servers/index_server.py serves. Each wheel holds:
- a few large `.so`-like members (mode 0755): 64 KiB blocks, some random bytes (compressed
  code and data do not shrink), the rest drawn from a small vocabulary of tokens (instruction
  streams and symbol tables do); about 2:1 overall, as the CUDA libraries in real wheels;
- many small `.py` files (the first wheel gets most of them, like torch);
- METADATA, WHEEL and a RECORD with every member's sha256 and size.
Every member is stored with deflate at the default level, as `wheel` and setuptools write them.
Wheels are written in parallel (one process per wheel). OUT/.params records the parameters:
a second call with the same ones does nothing.
"""

import argparse
import base64
import hashlib
import json
import multiprocessing
import os
import random
import shutil
import sys
import zipfile

BLOCK = 64 << 10


def b64(digest):
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def block_pool(rng, count=64):
    """Compressible 64 KiB blocks: tokens of 4-24 bytes from a 200-token vocabulary."""
    vocab = [rng.randbytes(rng.randint(4, 24)) for _ in range(200)]
    pool = []
    for _ in range(count):
        parts, size = [], 0
        while size < BLOCK:
            token = rng.choice(vocab)
            parts.append(token)
            size += len(token)
        pool.append(b"".join(parts)[:BLOCK])
    return pool


def so_blocks(rng, pool, size, random_share):
    left = size
    while left > 0:
        n = min(left, BLOCK)
        block = rng.randbytes(n) if rng.random() < random_share else rng.choice(pool)[:n]
        left -= n
        yield block


def small_py(rng, i):
    body = "".join(
        "def f%d_%d(x):\n    return x * %d + %d  # %s\n\n"
        % (i, j, rng.randint(0, 999), j, rng.randbytes(8).hex())
        for j in range(rng.randint(5, 120))
    )
    return ('"""module %d"""\nimport os\n\n' % i + body).encode()


def write_wheel(job):
    root, name, so_sizes, small_files, seed = job
    rng = random.Random(seed)
    pool = block_pool(rng)
    wheel = "%s-1.0-py3-none-manylinux2014_x86_64.whl" % name
    path = os.path.join(root, "files", wheel)
    info = "%s-1.0.dist-info" % name
    record = []

    def member(z, arcname, chunks, executable=False):
        zi = zipfile.ZipInfo(arcname, date_time=(2024, 1, 1, 0, 0, 0))
        zi.compress_type = zipfile.ZIP_DEFLATED
        zi.create_system = 3
        zi.external_attr = ((0o100755 if executable else 0o100644) & 0xFFFF) << 16
        sha, size = hashlib.sha256(), 0
        with z.open(zi, "w", force_zip64=True) as out:
            for chunk in chunks:
                sha.update(chunk)
                size += len(chunk)
                out.write(chunk)
        record.append("%s,sha256=%s,%d" % (arcname, b64(sha.digest()), size))

    with zipfile.ZipFile(path + ".part", "w") as z:
        for i in range(small_files):
            member(z, "%s/mod%04d/m%d.py" % (name, i // 100, i), [small_py(rng, i)])
        member(z, "%s/__init__.py" % name, [b"# benchmark package\n"])
        for i, mb in enumerate(so_sizes):
            member(z, "%s/lib/lib%s_%d.so.1" % (name, name, i),
                   so_blocks(rng, pool, int(mb * 1024 * 1024), 0.35), executable=True)
        member(z, info + "/METADATA",
               [("Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n" % name).encode()])
        member(z, info + "/WHEEL",
               [b"Wheel-Version: 1.0\nGenerator: venvfix-bench\nRoot-Is-Purelib: false\n"
                b"Tag: py3-none-manylinux2014_x86_64\n"])
        record.append(info + "/RECORD,,")
        z.writestr(zipfile.ZipInfo(info + "/RECORD", date_time=(2024, 1, 1, 0, 0, 0)),
                   "\n".join(record) + "\n", compress_type=zipfile.ZIP_DEFLATED)
    os.replace(path + ".part", path)
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(16 << 20), b""):
            sha.update(block)
    page = os.path.join(root, "simple", name)
    os.makedirs(page, exist_ok=True)
    with open(os.path.join(page, "index.html"), "w") as out:
        out.write('<a href="../../files/%s#sha256=%s">%s</a>\n' % (wheel, sha.hexdigest(), wheel))
    return wheel, os.path.getsize(path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--total-mb", type=int, default=1500, help="about the wheels' total size")
    parser.add_argument("--wheels", type=int, default=6)
    parser.add_argument("--small-files", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=20240301)
    parser.add_argument("--big-member-mb", type=int, default=0,
                        help="one wheel with a single library member of this many MB")
    args = parser.parse_args()
    params = json.dumps(vars(args), sort_keys=True)
    marker = os.path.join(args.out, ".params")
    if os.path.exists(marker) and open(marker).read() == params:
        print("reusing the wheels in %s" % args.out, file=sys.stderr)
        return
    os.makedirs(os.path.join(args.out, "files"), exist_ok=True)
    for stale in os.listdir(os.path.join(args.out, "files")):
        os.remove(os.path.join(args.out, "files", stale))
    if os.path.isdir(os.path.join(args.out, "simple")):
        shutil.rmtree(os.path.join(args.out, "simple"))  # the pages of the wheels just removed
    # Shares of the total, largest first (cuDNN, cuBLAS, ...); big wheels get more members.
    shares = [30, 24, 16, 12, 10, 8][: args.wheels] + [8] * max(0, args.wheels - 6)
    scale = args.total_mb * 2.0 / sum(shares)  # inflated MB; the wheels come out about half
    jobs = []
    if args.big_member_mb:
        shares = []
        jobs.append((args.out, "benchbig00", [args.big_member_mb], 100, args.seed))
    for i, share in enumerate(shares):
        mb = share * scale
        parts = 4 if mb > 400 else 3 if mb > 200 else 2
        sizes = [mb * w / sum(range(1, parts + 1)) for w in range(parts, 0, -1)]
        small = args.small_files * 2 // 3 if i == 0 else args.small_files // (3 * (len(shares) - 1))
        jobs.append((args.out, "benchnv%02d" % i, sizes, small, args.seed + i))
    print("writing about %d MB of wheels..." % args.total_mb, file=sys.stderr)
    with multiprocessing.Pool(min(len(jobs), os.cpu_count() or 1)) as pool:
        done = pool.map(write_wheel, jobs)
    for wheel, size in done:
        print("%s %d" % (wheel, size), file=sys.stderr)
    with open(marker, "w") as out:
        out.write(params)


if __name__ == "__main__":
    main()
