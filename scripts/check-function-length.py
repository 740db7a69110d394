#!/usr/bin/env python3
"""Fails when a function in src/ or include/ is longer than the limit (docs/CONTRIBUTING.md).

Function extents come from universal-ctags (`--fields=+ne`: start and end line), so a lambda
counts toward the function that holds it. Usage: check-function-length.py [--limit N] [ROOT]
"""
import argparse
import pathlib
import shutil
import subprocess
import sys

# "path:function" entries allowed to exceed the limit, each with a reason. Keep it empty.
ALLOWED = {}


def functions(root):
    """Yields (path, start, end, name) for every function definition under src/ and include/."""
    ctags = shutil.which("ctags")
    if ctags is None:
        sys.exit("check-function-length: universal-ctags is not installed (scripts/setup.sh installs it)")
    out = subprocess.run(
        [ctags, "-x", "--languages=C++", "--c++-kinds=f", "--fields=+ne",
         "--_xformat=%{end}\t%n\t%F\t%N", "-R", "src", "include"],
        cwd=root, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        end, start, path, name = line.split("\t")
        if end and start:
            yield path, int(start), int(end), name


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=80)
    parser.add_argument("root", nargs="?", default=pathlib.Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    too_long = []
    count = 0
    for path, start, end, name in functions(args.root):
        count += 1
        length = end - start + 1
        if length > args.limit and f"{path}:{name}" not in ALLOWED:
            too_long.append((length, path, start, name))
    for length, path, start, name in sorted(too_long, reverse=True):
        print(f"{path}:{start}: {name} is {length} lines (limit {args.limit})")
    print(f"check-function-length: {count} functions, {len(too_long)} over {args.limit} lines")
    return 1 if too_long else 0


if __name__ == "__main__":
    sys.exit(main())
