#!/usr/bin/env python3
"""Runs clang-tidy (the checks in .clang-tidy) over every translation unit of a build.

Results are cached by the hash of what clang-tidy would see: the preprocessed translation
unit, the command line, .clang-tidy and the clang-tidy version. An unchanged file is not
analysed again (2 cores: a cold run over every file takes minutes, a warm one seconds).
Usage: tidy.py BUILD_DIR [FILE ...]; exits 1 if any file has a warning.
"""
import concurrent.futures
import hashlib
import json
import os
import pathlib
import shlex
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) / "venvfix-clang-tidy"
# GCC-only warning options in the build's flags; clang-tidy's parser need not know them.
EXTRA = ["--extra-arg=-Wno-unknown-warning-option"]


def tidy_version():
    return subprocess.run(["clang-tidy", "--version"], check=True, capture_output=True, text=True).stdout


def cache_key(entry, salt):
    """Hash of the preprocessed unit (gcc -E from the build's own command) and the salt."""
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    if "-o" in args:
        at = args.index("-o")
        del args[at:at + 2]
    args = [a for a in args if a not in ("-c",) and not a.startswith("-M")]
    drop = {"-MF", "-MT", "-MQ"}
    cleaned = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in drop:
            skip = True
            continue
        cleaned.append(a)
    if cleaned and cleaned[0].endswith("ccache"):
        cleaned = cleaned[1:]
    pre = subprocess.run(cleaned + ["-E", "-P"], cwd=entry["directory"], capture_output=True)
    # Paths of the checkout are left out, so that a clone elsewhere reuses the results.
    root = str(ROOT).encode()
    digest = hashlib.sha256(salt)
    digest.update(" ".join(cleaned).encode().replace(root, b""))
    digest.update(pre.stdout.replace(root, b"") if pre.returncode == 0 else os.urandom(16))
    return digest.hexdigest()


def check(entry, build_dir, salt):
    key = cache_key(entry, salt)
    if (CACHE / key).exists():
        return entry["file"], True, ""
    run = subprocess.run(["clang-tidy", "-p", str(build_dir), "--quiet", *EXTRA, entry["file"]],
                         cwd=ROOT, capture_output=True, text=True)
    text = run.stdout + run.stderr
    clean = run.returncode == 0 and "warning:" not in run.stdout and "error:" not in run.stdout
    if clean:
        CACHE.mkdir(parents=True, exist_ok=True)
        (CACHE / key).write_text(entry["file"] + "\n")
    return entry["file"], clean, text


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: tidy.py BUILD_DIR [FILE ...]")
    build_dir = pathlib.Path(sys.argv[1]).resolve()
    entries = json.loads((build_dir / "compile_commands.json").read_text())
    wanted = {str(pathlib.Path(f).resolve()) for f in sys.argv[2:]}
    entries = [e for e in entries
               if str(pathlib.Path(e["file"]).resolve()).startswith(str(ROOT) + "/")
               and "/build/" not in e["file"]
               and (not wanted or str(pathlib.Path(e["file"]).resolve()) in wanted)]
    salt = (tidy_version() + (ROOT / ".clang-tidy").read_text()).encode()
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for name, clean, text in pool.map(lambda e: check(e, build_dir, salt), entries):
            if not clean:
                failed += 1
                print(text, end="")
    print(f"tidy: {len(entries)} files, {failed} with warnings")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
