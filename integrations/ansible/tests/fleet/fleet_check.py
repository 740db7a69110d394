"""Checks one ansible-playbook run of the fleet test (its json callback output) against what
that step must show. Usage: fleet_check.py STEP RESULT.json [--snapshots OUT.json]

Hosts: seed-a and seed-b (seed-broken), healthy, drift (seed-broken, repaired by hand with pip
after check.yml reviewed its plan). Exit 0 when every expectation holds, 1 with each miss said.
"""

import argparse
import json
import sys

BROKEN = ("seed-a", "seed-b")
ALL = ("seed-a", "seed-b", "healthy", "drift")


def module_results(run, module):
    """host -> result of the task of that name."""
    found = {}
    for play in run["plays"]:
        for task in play["tasks"]:
            for host, result in task["hosts"].items():
                if task["task"].get("name", "") == module:
                    found[host] = result
    return found


class Checker:
    def __init__(self):
        self.misses = []

    def expect(self, ok, what):
        if not ok:
            self.misses.append(what)


def check_info(c, results):
    for host in ALL:
        r = results.get(host, {})
        c.expect(not r.get("failed") and r.get("changed") is False, "%s: info ok, unchanged: %s" % (host, r.get("msg")))
        c.expect(r.get("doctor", {}).get("schema") == "venvfix-doctor/1", "%s: a doctor document" % host)
        c.expect("probe" in r.get("doctor", {}), "%s: the doctor document has the probe's result" % host)
        broken = host != "healthy"
        c.expect(r.get("healthy") is (not broken), "%s: healthy is %s" % (host, not broken))
        ghosts = [f for f in r.get("findings", []) if f.get("kind") == "ghost-files"
                  and f.get("dist") == "nvidia-cudnn-cu12"]
        c.expect(bool(ghosts) == broken, "%s: ghost nvidia-cudnn-cu12 finding %s" % (host, broken))
        c.expect(r.get("targets") == ["torch"], "%s: targets [torch], got %s" % (host, r.get("targets")))


def check_check(c, results, would_change):
    for host in ALL:
        r = results.get(host, {})
        c.expect(not r.get("failed"), "%s: check did not fail: %s" % (host, r.get("msg")))
        c.expect(r.get("changed") is (host in would_change), "%s: changed is %s" % (host, host in would_change))
        c.expect(r.get("plan", {}).get("schema") == "venvfix-plan/1", "%s: a plan document" % host)
        if host in would_change:
            after = (r.get("diff") or {}).get("after", "")
            before = (r.get("diff") or {}).get("before", "")
            c.expect("nvidia-cudnn-cu12 9.10.2.21 from nvidia_cudnn_cu12-9.10.2.21" in after,
                     "%s: the diff's after names the wheel: %r" % (host, after[:200]))
            c.expect("missing nvidia/cudnn/lib/libcudnn.so.9" in before,
                     "%s: the diff's before names the missing file: %r" % (host, before[:200]))
        else:
            c.expect(not r.get("diff"), "%s: no diff" % host)


def check_apply(c, results, snapshots_out):
    snapshots = {}
    for host in BROKEN:
        r = results.get(host, {})
        c.expect(not r.get("failed") and r.get("changed") is True, "%s: repaired, changed: %s" % (host, r.get("msg")))
        c.expect(r.get("verified") is True and r.get("rolled_back") is False, "%s: verified, not rolled back" % host)
        c.expect(bool(r.get("snapshot")), "%s: a snapshot id" % host)
        c.expect([a.get("dist") for a in r.get("apply", {}).get("actions", [])] == ["nvidia-cudnn-cu12"],
                 "%s: applied the nvidia-cudnn-cu12 reinstall" % host)
        snapshots[host] = r.get("snapshot")
    r = results.get("healthy", {})
    c.expect(not r.get("failed") and r.get("changed") is False, "healthy: unchanged: %s" % r.get("msg"))
    r = results.get("drift", {})
    c.expect(r.get("failed") is True and r.get("exit_code") == 7, "drift: failed with exit 7, got %s" % r.get("exit_code"))
    c.expect("the venv changed since planning" in r.get("msg", "") and "venvfix exited 7" in r.get("msg", ""),
             "drift: the message says the drift: %r" % r.get("msg"))
    if snapshots_out:
        with open(snapshots_out, "w") as out:
            json.dump({"venvfix_snapshots": snapshots}, out)


def check_unchanged(c, results, hosts):
    for host in hosts:
        r = results.get(host, {})
        c.expect(r and not r.get("failed") and r.get("changed") is False,
                 "%s: ok and unchanged: changed=%s msg=%s" % (host, r.get("changed"), r.get("msg")))


def check_rollback_check(c, results, snapshots):
    for host in BROKEN:
        r = results.get(host, {})
        c.expect(not r.get("failed") and r.get("changed") is True, "%s: would roll back: %s" % (host, r.get("msg")))
        c.expect(r.get("snapshot_info", {}).get("id") == snapshots.get(host), "%s: shows its snapshot" % host)


def check_rollback(c, results, snapshots):
    for host in BROKEN:
        r = results.get(host, {})
        c.expect(not r.get("failed") and r.get("changed") is True, "%s: rolled back: %s" % (host, r.get("msg")))
        c.expect(r.get("rollback", {}).get("restored") == snapshots.get(host), "%s: restored its snapshot" % host)
        c.expect(bool(r.get("undo_snapshot")), "%s: an undo snapshot" % host)


def check_errors(c, results, dead_index):
    r = results.get("seed-a", {})
    c.expect(r.get("failed") is True and r.get("exit_code") == 4 and dead_index in r.get("msg", ""),
             "seed-a: failed with exit 4 naming %s: %r" % (dead_index, r.get("msg")))
    r = results.get("seed-b", {})
    c.expect(r.get("failed") is True and r.get("exit_code") == 5 and r.get("rolled_back") is True
             and "rolled back" in r.get("msg", ""), "seed-b: failed with exit 5, rolled back: %r" % r.get("msg"))
    r = results.get("healthy", {})
    c.expect(r.get("failed") is True and r.get("exit_code") == 6 and "locked" in r.get("msg", ""),
             "healthy: failed with exit 6, locked: %r" % r.get("msg"))
    for host in ("seed-a", "seed-b", "healthy"):
        c.expect(results.get(host, {}).get("changed") is False, "%s: not changed" % host)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=["info", "check", "apply", "again-check", "again-apply",
                                         "rollback-check", "rollback", "errors", "heal", "heal-again"])
    parser.add_argument("result")
    parser.add_argument("--snapshots")
    parser.add_argument("--dead-index", default="http://127.0.0.1:9/simple/")
    args = parser.parse_args()
    with open(args.result) as handle:
        run = json.load(handle)
    c = Checker()
    if args.step == "info":
        check_info(c, module_results(run, "Run venvfix doctor"))
    elif args.step == "check":
        check_check(c, module_results(run, "Plan with venvfix"), BROKEN + ("drift",))
    elif args.step == "apply":
        check_apply(c, module_results(run, "Apply with venvfix"), args.snapshots)
    elif args.step == "again-check":
        check_check(c, module_results(run, "Plan with venvfix"), ())
    elif args.step == "again-apply":
        check_unchanged(c, module_results(run, "Apply with venvfix"), ALL)
    elif args.step in ("rollback-check", "rollback"):
        with open(args.snapshots) as handle:
            snapshots = json.load(handle)["venvfix_snapshots"]
        check = check_rollback if args.step == "rollback" else check_rollback_check
        check(c, module_results(run, "Roll back with venvfix"), snapshots)
    elif args.step == "errors":
        check_errors(c, module_results(run, "Repair that fails"), args.dead_index)
    elif args.step == "heal":
        results = module_results(run, "Repair with venvfix")
        for host in BROKEN:
            r = results.get(host, {})
            c.expect(not r.get("failed") and r.get("changed") is True and r.get("verified") is True,
                     "%s: repaired again: %s" % (host, r.get("msg")))
        check_unchanged(c, results, ("healthy", "drift"))
    elif args.step == "heal-again":
        check_unchanged(c, module_results(run, "Repair with venvfix"), ALL)
    for miss in c.misses:
        print("fleet: %s: expected %s" % (args.step, miss), file=sys.stderr)
    print("fleet: %s: %s" % (args.step, "ok" if not c.misses else "%d misses" % len(c.misses)), file=sys.stderr)
    return 1 if c.misses else 0


if __name__ == "__main__":
    sys.exit(main())
