#!/usr/bin/env bash
# The load check alone, two binaries side by side: the re-apply with --recheck-loads (the unpacked
# cache holds every wheel, so nothing is downloaded or inflated; every library's verdict key is
# listed and every library loaded again) into a fresh copy of the apply benchmark's venv, the two
# binaries alternating for ROUNDS rounds. Prints each run (binary, wall s, the report's verify_s,
# libraries checked), then the medians.
#
#   bench/load_check_bench.sh WORK NEW BASELINE [ROUNDS]
#
# WORK: a directory `bench/apply_bench.sh --real-nvidia --keep --work WORK` left (its index and
# empty venv). NEW, BASELINE: venvfix binaries (say WORK/build/venvfix and a Release of main).
set -euo pipefail
[ $# -ge 3 ] || { sed -n 2,11p "$0" >&2; exit 2; }
work=$(realpath "$1"); new=$(realpath "$2"); base=$(realpath "$3"); rounds=${4:-10}
repo=$(cd "$(dirname "$0")/.." && pwd)
ab=$(mktemp -d /tmp/venvfix-load-check-bench.XXXXXX)
python3 "$repo/tests/servers/index_server.py" --root "$work/www" > "$ab/server.out" 2>/dev/null &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true; rm -rf "$ab"' EXIT
for _ in $(seq 100); do [ -s "$ab/server.out" ] && break; sleep 0.1; done
index="http://127.0.0.1:$(head -1 "$ab/server.out")/simple"

# A fresh venv and the plan that installs every wheel of the index into it (untimed).
prepare() {
  rm -rf "$ab/out"; mkdir -p "$ab/out"; cp -a "$work/venv" "$ab/out/venv"
  "$new" --venv "$ab/out/venv" --json -q plan > "$ab/out/empty-plan.json" || true
  python3 "$repo/bench/plan_every_wheel.py" "$ab/out/empty-plan.json" "$work/www" "$index" \
    "load check benchmark" > "$ab/out/plan.json"
  sync
}
reapply() {
  "$1" --venv "$ab/out/venv" --cache-dir "$ab/cache" --index-url "$index/" --json -q apply \
    "$ab/out/plan.json" --yes --recheck-loads
}

prepare; reapply "$new" > /dev/null  # fills the unpacked cache
for _ in $(seq "$rounds"); do
  for which in new baseline; do
    binary=$new; [ "$which" = baseline ] && binary=$base
    prepare
    start=$(date +%s.%N); reapply "$binary" > "$ab/out/report.json"; end=$(date +%s.%N)
    python3 - "$which" "$start" "$end" "$ab/out/report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[4]))
print(sys.argv[1], round(float(sys.argv[3]) - float(sys.argv[2]), 3),
      report["timings"]["verify_s"], len(report["verification"]["loads"]))
PY
  done
done | tee "$ab/runs.txt"
python3 - "$ab/runs.txt" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for which in ("new", "baseline"):
    wall = [float(r[1]) for r in rows if r[0] == which]
    verify = [float(r[2]) for r in rows if r[0] == which]
    print(f"{which}: re-apply median {statistics.median(wall):.3f} s ({min(wall):.3f}-{max(wall):.3f}), "
          f"verify median {statistics.median(verify):.3f} s ({min(verify):.3f}-{max(verify):.3f})")
PY
