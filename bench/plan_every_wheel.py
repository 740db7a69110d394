#!/usr/bin/env python3
"""The plan that installs every wheel of a benchmark's index into a venv.

    plan_every_wheel.py EMPTY_PLAN WWW INDEX_URL REASON > PLAN

EMPTY_PLAN: `venvfix plan --json` of the venv (its `state`); WWW: the index's root (its files/
directory holds the wheels); INDEX_URL: the index's /simple URL. Each wheel becomes an install
action with its URL on that index, its sha256 and size.
"""
import hashlib
import json
import os
import sys


def main():
    empty_plan, www, index, reason = sys.argv[1:5]
    plan = json.load(open(empty_plan))
    files = os.path.join(www, "files")
    base = index.rsplit("/simple", 1)[0] + "/files/"
    for name in sorted(os.listdir(files)):
        path = os.path.join(files, name)
        digest = hashlib.sha256()
        with open(path, "rb") as wheel:
            for chunk in iter(lambda: wheel.read(1 << 20), b""):
                digest.update(chunk)
        dist, version = name.split("-")[:2]
        plan["actions"].append({"action": "install", "dist": dist.replace("_", "-"),
                                "version": version, "file": name, "url": base + name,
                                "sha256": digest.hexdigest(), "size": os.path.getsize(path),
                                "provides": [], "reason": reason})
    print(json.dumps(plan, indent=2))


if __name__ == "__main__":
    main()
