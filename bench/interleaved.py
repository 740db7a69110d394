#!/usr/bin/env python3
"""Times whole commands side by side, interleaved: each round runs every command once, in turn,
so that a change in the load of a shared machine falls on all of them alike. Reports, per command,
the median, minimum and maximum wall time and the median user and system CPU time of the command
and its children (getrusage), relative to the first command; and the machine's load averages and
how busy its CPUs were (/proc/stat) while the benchmark ran: on a shared machine wall time alone
says little.

    interleaved.py [--rounds N] [--warmup N] -n NAME [-p PREPARE] -c COMMAND ...

A command and its PREPARE (run before each of its timed runs, not timed) are shell lines.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time


def cpu_busy() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def run_once(command: str) -> tuple[float, float, float]:
    """(wall, user, system) seconds of one run of `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"interleaved.py: `{command}` exited {result.returncode}: "
                 f"{result.stderr.decode(errors='replace')[-2000:]}")
    return wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("-n", "--name", action="append", default=[])
    parser.add_argument("-c", "--command", action="append", default=[])
    parser.add_argument("-p", "--prepare", action="append", default=[])
    args = parser.parse_args()
    if not args.command or len(args.name) != len(args.command):
        parser.error("give one -n NAME per -c COMMAND")
    # A --prepare belongs to the command whose -n came last before it.
    prepares: dict[int, str] = {}
    index = -1
    argv = sys.argv[1:]
    for i, word in enumerate(argv):
        if word in ("-n", "--name"):
            index += 1
        elif word in ("-p", "--prepare"):
            prepares[index] = argv[i + 1]
    args.prepares = [prepares.get(i) for i in range(len(args.command))]
    return args


def main() -> None:
    args = parse()
    for _ in range(args.warmup):
        for prepare, command in zip(args.prepares, args.command):
            if prepare:
                run_once(prepare)
            run_once(command)
    samples: list[list[tuple[float, float, float]]] = [[] for _ in args.command]
    load_before = open("/proc/loadavg").read().split()[:3]
    busy0, total0 = cpu_busy()
    for _ in range(args.rounds):
        for i, (prepare, command) in enumerate(zip(args.prepares, args.command)):
            if prepare:
                run_once(prepare)
            samples[i].append(run_once(command))
    busy1, total1 = cpu_busy()
    load_after = open("/proc/loadavg").read().split()[:3]
    print(f"{args.rounds} interleaved rounds after {args.warmup} warm-up rounds; "
          f"{os.cpu_count()} CPUs, {100 * (busy1 - busy0) / max(total1 - total0, 1):.0f} % busy "
          f"(all processes); load average {' '.join(load_before)} before, "
          f"{' '.join(load_after)} after\n")
    print("| command | median wall | min | max | median user | median sys | ÷ first |")
    print("|:---|---:|---:|---:|---:|---:|---:|")
    first = statistics.median(s[0] for s in samples[0])
    for name, runs in zip(args.name, samples):
        walls = [r[0] for r in runs]
        median = statistics.median(walls)
        print(f"| {name} | {median * 1000:.0f} ms | {min(walls) * 1000:.0f} ms | "
              f"{max(walls) * 1000:.0f} ms | {statistics.median(r[1] for r in runs) * 1000:.0f} ms | "
              f"{statistics.median(r[2] for r in runs) * 1000:.0f} ms | {median / first:.2f}× |")


if __name__ == "__main__":
    main()
