#!/usr/bin/env bash
# Apply benchmark: staging a plan of several large wheels (~1.5 GB, bench/make_big_wheels.py)
# from a loopback index, with venvfix next to `pip install --no-deps` of the same wheels,
# `bsdtar -xf` of them one after another (the sequential floor) and curl of them one after
# another (the network's floor), side by side in one run.
#
#   bench/apply_bench.sh [--total-mb 1500] [--big-member-mb N] [--real-nvidia] [--rate-mb R]
#                        [--cgroup-mb M] [--durability-row] [--repeat 3] [--work DIR] [--out DIR]
#                        [--keep] [--markdown FILE]
#
# --big-member-mb N: instead of the plan of six wheels, one wheel whose library is a single
# member of N MB (the bounded-memory check: a 2 GB member must not cost 2 GB of memory).
# --real-nvidia: NVIDIA's real bytes instead: nvidia-cudnn-cu13 9.19.0.56 and nvidia-cublas
# 13.1.0.3 rebuilt from this machine's CUDA 13 runtime, every member checked against its RECORD
# hash (bench/make_real_wheels.py).
# --rate-mb R: the index sends at most R MB/s, all connections together
# (tests/servers/index_server.py --rate-mb): compare the cold apply with the curl row.
# --cgroup-mb M: one more row, the same cold apply run in a memory cgroup limited to M MiB (root,
# cgroup v1 memory controller at /sys/fs/cgroup/memory; refused where there is none); the
# group's failcnt and peak usage are printed after the table.
# --durability-row: one more row, the same cold apply with fsync, fdatasync and syncfs turned
# into no-ops by an LD_PRELOAD shim (bench/no_fsync.cc): the difference to the first row is what
# making the transaction durable costs on this disk. Never a mode of venvfix.
# BASELINE=/path/to/venvfix (env): one more row, the same cold apply with that binary (say a
# Release build of main), in the same rounds.
#
# Rows (wall time of the whole process, fresh output directory and venv each time, `sync`
# before each run so no run pays for the previous one's writeback):
# - `venvfix apply PLAN --snapshot --yes` of a plan that installs every wheel (URLs on the loopback index,
#   sha256 and sizes; made untimed for each fresh venv with `venvfix plan --json` and the
#   actions added), with empty caches: download, stage (overlapped), the journaled moves with
#   their fsyncs, the dist-info, verification. This is the whole transaction, safety included.
# - the same apply again with the caches warm (a re-apply: the unpacked-wheel cache holds every
#   wheel, as after a rollback; the download cache holds no .whl, the cold apply streamed them;
#   the load check's verdicts are kept, docs/apply.md "Kept verdicts"), and once more with
#   --recheck-loads (every library loaded again, as before verdicts were kept).
# - venvfix stage only, parallel / streaming: wheel::install_wheel of the local wheel files
#   (bench/unpack_bench.cpp) with the parallel unpacker, and with the one-thread libarchive
#   reference (Unpack::streaming): no transaction, no download.
# - pip install --no-deps --no-compile from the index into a fresh venv: cold (--no-cache-dir)
#   and with pip's cache warm.
# - bsdtar -xf of the local wheel files one after another.
# - a local wheelhouse: the cold apply with `--find-links` of the wheels' directory (read, not
#   downloaded), beside `pip install --no-index --find-links` of it.
# - the wheels in the download cache: `venvfix fetch` of the plan first (untimed; it leaves the
#   .whl files in the cache), then the apply with that cache (the unpacked-wheel cache empty).
#   And a cache that holds only the plan's first wheel (the last one's blob removed after the
#   fetch): one wheel read from the cache, the other downloaded, in the same apply.
# Each row also reports the peak resident set (ru_maxrss through /usr/bin/time) of its largest
# process, the largest over the rounds.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
total_mb=1500
big_member_mb=0
real_nvidia=0
rate_mb=""
cgroup_mb=""
durability_row=0
repeat=3
work=""
out_root=""
keep=0
markdown=""
while [ $# -gt 0 ]; do
  case "$1" in
    --total-mb) total_mb=$2; shift 2 ;;
    --big-member-mb) big_member_mb=$2; shift 2 ;;
    --real-nvidia) real_nvidia=1; shift ;;
    --rate-mb) rate_mb=$2; shift 2 ;;
    --cgroup-mb) cgroup_mb=$2; shift 2 ;;
    --durability-row) durability_row=1; shift ;;
    --repeat) repeat=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out_root=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --markdown) markdown=$2; shift 2 ;;
    *) echo "usage: $0 [--total-mb N] [--big-member-mb N] [--real-nvidia] [--rate-mb R] [--cgroup-mb M] [--durability-row] [--repeat N] [--work DIR] [--out DIR] [--keep] [--markdown FILE]" >&2; exit 2 ;;
  esac
done

if [ -z "$work" ]; then work=$(mktemp -d /var/tmp/venvfix-apply-bench.XXXXXX); fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
if [ -z "$out_root" ]; then out_root="$work"; fi
out_root=$(mkdir -p "$out_root/venvfix-bench-out" && cd "$out_root/venvfix-bench-out" && pwd)
server_pid=""
cgroup=""
cleanup() {
  if [ -n "$cgroup" ]; then rmdir "$cgroup" 2>/dev/null || true; fi
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$out_root"
  if [ "$keep" = 0 ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

# --- the venvfix side -------------------------------------------------------------------------
build="$work/build"
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
echo "building venvfix and unpack_bench (Release)..." >&2
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVENVFIX_BENCH=ON \
  -DVENVFIX_TESTS=OFF -DVENVFIX_WERROR=OFF "${launcher[@]}" > "$work/cmake.log"
ninja -C "$build" -j "$(nproc)" venvfix unpack_bench > "$work/ninja.log"
venvfix="$build/venvfix"
no_fsync="$build/no_fsync.so"
if [ "$durability_row" = 1 ]; then
  g++ -O2 -shared -fPIC -o "$no_fsync" "$repo/bench/no_fsync.cc"
fi
driver="$build/bench/unpack_bench"

# --- the wheels, the index and a venv ---------------------------------------------------------
if [ "$real_nvidia" = 1 ]; then
  python3 "$repo/bench/make_real_wheels.py" "$work/www"
elif [ "$big_member_mb" != 0 ]; then
  python3 "$repo/bench/make_big_wheels.py" "$work/www" --big-member-mb "$big_member_mb"
else
  python3 "$repo/bench/make_big_wheels.py" "$work/www" --total-mb "$total_mb"
fi
names=(); files=()
for page in "$work"/www/simple/*/; do names+=("$(basename "$page")"); done
for f in "$work"/www/files/*.whl; do files+=("$f"); done
wheel_bytes=$(cat "${files[@]}" | wc -c)
installed_bytes=$(python3 -c 'import sys, zipfile; print(sum(i.file_size for f in sys.argv[1:] for i in zipfile.ZipFile(f).infolist()))' "${files[@]}")

throttle=(); if [ -n "$rate_mb" ]; then throttle=(--rate-mb "$rate_mb"); fi
python3 "$repo/tests/servers/index_server.py" --root "$work/www" "${throttle[@]}" > "$work/server.out" &
server_pid=$!
# The index stands for a remote server: its sending must not slow down because the client keeps
# both CPUs busy (a throttled round's schedule loses the slots its thread wakes late for). Above
# everything else where allowed (root); the same for every row.
renice -n -5 -p "$server_pid" > /dev/null 2>&1 || true
for _ in $(seq 100); do [ -s "$work/server.out" ] && break; sleep 0.1; done
index="http://127.0.0.1:$(head -1 "$work/server.out")/simple"
python3 -m venv --without-pip "$work/venv"

# --- the runs ---------------------------------------------------------------------------------
now() { date +%s.%N; }
# CPU seconds (user + system) of every child this shell has waited for: on a shared machine
# the wall time depends on the other load, the CPU time much less.
# (`times` runs in this shell: in a $(...) subshell it would see no children.)
cpu_now() { times > "$work/times.txt"; cpu_seconds=$(tail -1 "$work/times.txt" | sed 's/[ms]/ /g' | awk '{print $1 * 60 + $2 + $3 * 60 + $4}'); }
declare -A times cpu rss
# The peak RSS (KiB) of one timed process: `timed CMD...` runs CMD under /usr/bin/time.
timed() { /usr/bin/time -a -f %M -o "$out/rss.txt" "$@"; }
run() {  # run LABEL PREPARE COMMAND... (in a fresh output directory $out; PREPARE untimed)
  local label=$1 prepare=$2; shift 2
  out="$out_root/out"; rm -rf "$out"; mkdir -p "$out"
  "$prepare"
  rm -f "$out/rss.txt"
  sync
  local start end cpu_start cpu_end
  cpu_now; cpu_start=$cpu_seconds
  start=$(now)
  "$@" > "$work/last.log" 2>&1 || { echo "$label failed:" >&2; cat "$work/last.log" >&2; exit 1; }
  end=$(now)
  cpu_now; cpu_end=$cpu_seconds
  times[$label]+="$(echo "$end - $start" | bc) "
  if [ -s "$out/rss.txt" ]; then rss[$label]+="$(sort -n "$out/rss.txt" | tail -1) "; fi
  cpu[$label]+="$(echo "$cpu_end - $cpu_start" | bc) "
}
fresh_venv() { cp -a "$work/venv" "$out/venv"; }
nothing() { :; }
# A fresh venv and the plan that installs every wheel into it (its `state` is that venv's).
fresh_venv_and_plan() {
  fresh_venv
  "$venvfix" --venv "$out/venv" --json -q plan > "$out/empty-plan.json" || true
  python3 "$repo/bench/plan_every_wheel.py" "$out/empty-plan.json" "$work/www" "$index" \
    "apply benchmark" > "$out/plan.json"
}
apply_extra=()  # more apply options for the next venvfix_apply
venvfix_apply() {  # venvfix_apply CACHE_DIR [BINARY] (the venvfix-apply/1 report on stdout)
  timed "${2:-$venvfix}" --venv "$out/venv" --cache-dir "$1" --index-url "$index/" --json -q apply \
    "$out/plan.json" --snapshot --yes "${apply_extra[@]}"
}
# The cold apply's own phase timings (venvfix-apply/1 "timings"), one JSON line per round.
venvfix_cold() { venvfix_apply "$out/cache" > "$out/apply.json"; cp "$out/apply.json" "$work/apply-$RANDOM.json"; }
# The cold apply as a process of the memory cgroup: the shell joins it, then becomes the apply.
cgroup_cold() {
  timed /bin/sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cgroup" \
    "$venvfix" --venv "$out/venv" --cache-dir "$out/cache" --index-url "$index/" --json -q apply \
    "$out/plan.json" --snapshot --yes > /dev/null
}
baseline_cold() { venvfix_apply "$out/cache" "$BASELINE" > /dev/null; }
# The same plan with the wheels in a local wheelhouse (--find-links: the plan's wheels are read
# from there instead of the index), with this build and with BASELINE.
wheelhouse_cold() {
  apply_extra=(--find-links "$work/www/files")
  venvfix_apply "$out/cache" "${1:-}" > /dev/null
  apply_extra=()
}
baseline_wheelhouse_cold() { wheelhouse_cold "$BASELINE"; }
# A fresh venv and plan, and the plan's wheels in a new download cache (`venvfix fetch`).
fresh_venv_plan_and_fetched() {
  fresh_venv_and_plan
  "$venvfix" --cache-dir "$out/cache" --index-url "$index/" -q fetch "$out/plan.json" \
    --dest "$out/wheelhouse" > /dev/null
  rm -rf "$out/wheelhouse"
}
fetched_cold() { venvfix_apply "$out/cache" "${1:-}" > /dev/null; }
# The same, with the blob of the plan's last wheel removed from the download cache.
fresh_venv_plan_and_fetched_first() {
  fresh_venv_plan_and_fetched
  python3 - "$out/plan.json" "$out/cache" <<'PY'
import json, os, sys
plan, cache = sys.argv[1], sys.argv[2]
last = [a for a in json.load(open(plan))["actions"] if a["action"] == "install"][-1]
os.remove(os.path.join(cache, "wheels", "sha256", last["sha256"][:2], last["sha256"]))
PY
}
baseline_fetched_cold() { fetched_cold "$BASELINE"; }
# /usr/bin/time runs first, so only the apply (and its children) has the shim.
not_durable_cold() {
  /usr/bin/time -a -f %M -o "$out/rss.txt" env LD_PRELOAD="$no_fsync" "$venvfix" --venv "$out/venv" \
    --cache-dir "$out/cache" --index-url "$index/" --json -q apply "$out/plan.json" --snapshot --yes \
    > /dev/null
}
venvfix_cached() { venvfix_apply "$out_root/warm-cache"; }
# The same, every library loaded again (--recheck-loads): what the kept load verdicts save.
venvfix_cached_recheck() {
  timed "$venvfix" --venv "$out/venv" --cache-dir "$out_root/warm-cache" --index-url "$index/" --json -q \
    apply "$out/plan.json" --snapshot --yes --recheck-loads
}
warm_caches() {  # untimed: fill venvfix's caches and pip's cache once
  out="$out_root/warm-out"; rm -rf "$out"; mkdir -p "$out"
  fresh_venv_and_plan
  venvfix_apply "$out_root/warm-cache" > /dev/null
  rm -rf "$out"
  python3 -m venv --without-pip "$out_root/pip-warm-venv"
  PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip --python "$out_root/pip-warm-venv/bin/python" install -q \
    --no-deps --no-compile --cache-dir "$out_root/pip-cache" --index-url "$index/" "${names[@]}"
  rm -rf "$out_root/pip-warm-venv"
  sync
}
fresh_venv_and_staging() { fresh_venv; mkdir -p "$out/staging"; }
stage_parallel() { timed "$driver" --venv "$out/venv" --staging "$out/staging" "${files[@]}"; }
stage_streaming() { timed "$driver" --venv "$out/venv" --staging "$out/staging" --streaming "${files[@]}"; }
pip_install() {
  PIP_DISABLE_PIP_VERSION_CHECK=1 timed python3 -m pip --python "$out/venv/bin/python" install -q --no-deps \
    --no-compile "$@" --index-url "$index/" "${names[@]}"
}
pip_cold() { pip_install --no-cache-dir; }
pip_wheelhouse() {
  PIP_DISABLE_PIP_VERSION_CHECK=1 timed python3 -m pip --python "$out/venv/bin/python" install -q --no-deps \
    --no-compile --no-cache-dir --no-index --find-links "$work/www/files" "${names[@]}"
}
pip_warm() { pip_install --cache-dir "$out_root/pip-cache"; }
bsdtar_seq() { for f in "${files[@]}"; do timed bsdtar -xf "$f" -C "$out"; done; }
curl_seq() {
  for f in "${files[@]}"; do
    timed curl -sSf -o "$out/$(basename "$f")" "${index%/simple}/files/$(basename "$f")"
  done
}

labels=("venvfix apply --snapshot (cold caches)" "venvfix apply --snapshot again (warm caches: re-apply)"
        "venvfix: stage local files, parallel" "venvfix: stage local files, streaming (1 thread)"
        "pip install --no-deps (--no-cache-dir)" "pip install --no-deps (warm pip cache)"
        "bsdtar -xf, one after another" "curl of the wheels, one after another"
        "venvfix re-apply, --recheck-loads (no kept load verdict)"
        "venvfix apply --snapshot --find-links (local wheelhouse, cold caches)"
        "pip install --no-deps --no-index --find-links (local wheelhouse, --no-cache-dir)"
        "venvfix apply --snapshot, the wheels in the download cache (after venvfix fetch)"
        "venvfix apply --snapshot, the first wheel in the download cache, the other from the index")
if [ -n "${BASELINE:-}" ]; then
  labels+=("venvfix apply --snapshot (cold caches), BASELINE"
           "venvfix apply --snapshot --find-links (local wheelhouse, cold caches), BASELINE"
           "venvfix apply --snapshot, the wheels in the download cache (after venvfix fetch), BASELINE"
           "venvfix apply --snapshot, the first wheel in the download cache, the other from the index, BASELINE")
fi
cgroup_label="venvfix apply --snapshot (cold caches), in a ${cgroup_mb} MiB memory cgroup"
durability_label="venvfix apply --snapshot (cold caches), fsync/fdatasync/syncfs no-ops (not durable)"
if [ "$durability_row" = 1 ]; then labels+=("$durability_label"); fi
if [ -n "$cgroup_mb" ]; then
  [ -d /sys/fs/cgroup/memory ] || { echo "--cgroup-mb: no cgroup v1 memory controller" >&2; exit 2; }
  cgroup=/sys/fs/cgroup/memory/venvfix-apply-bench-$$
  mkdir "$cgroup"
  echo $((cgroup_mb << 20)) > "$cgroup/memory.limit_in_bytes"
  labels+=("$cgroup_label")
fi
echo "warming the caches..." >&2
warm_caches
loads=()
for r in $(seq "$repeat"); do
  echo "round $r of $repeat..." >&2
  loads+=("$(cut -d' ' -f1 /proc/loadavg)")
  run "${labels[0]}" fresh_venv_and_plan venvfix_cold
  run "${labels[1]}" fresh_venv_and_plan venvfix_cached
  run "${labels[2]}" fresh_venv_and_staging stage_parallel
  run "${labels[3]}" fresh_venv_and_staging stage_streaming
  run "${labels[4]}" fresh_venv pip_cold
  run "${labels[5]}" fresh_venv pip_warm
  run "${labels[6]}" nothing bsdtar_seq
  run "${labels[7]}" nothing curl_seq
  run "${labels[8]}" fresh_venv_and_plan venvfix_cached_recheck
  run "${labels[9]}" fresh_venv_and_plan wheelhouse_cold
  run "${labels[10]}" fresh_venv pip_wheelhouse
  run "${labels[11]}" fresh_venv_plan_and_fetched fetched_cold
  run "${labels[12]}" fresh_venv_plan_and_fetched_first fetched_cold
  if [ -n "${BASELINE:-}" ]; then
    run "${labels[13]}" fresh_venv_and_plan baseline_cold
    run "${labels[14]}" fresh_venv_and_plan baseline_wheelhouse_cold
    run "${labels[15]}" fresh_venv_plan_and_fetched baseline_fetched_cold
    run "${labels[16]}" fresh_venv_plan_and_fetched_first baseline_fetched_cold
  fi
  if [ -n "$cgroup_mb" ]; then run "$cgroup_label" fresh_venv_and_plan cgroup_cold; fi
  if [ "$durability_row" = 1 ]; then run "$durability_label" fresh_venv_and_plan not_durable_cold; fi
done
loads+=("$(cut -d' ' -f1 /proc/loadavg)")
rm -rf "$out_root/out" "$out_root/warm-cache" "$out_root/pip-cache"

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
pip_median=$(echo "${times[${labels[4]}]}" | median)
pip_warm_median=$(echo "${times[${labels[5]}]}" | median)
bsdtar_median=$(echo "${times[${labels[6]}]}" | median)
curl_median=$(echo "${times[${labels[7]}]}" | median)
{
  echo "| run | median s | best s | all s | CPU s (median) | installed MB/s | peak RSS MiB | pip (cold) ÷ this | pip (warm) ÷ this | bsdtar ÷ this | this ÷ curl |"
  echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"
  for label in "${labels[@]}"; do
    m=$(echo "${times[$label]}" | median)
    b=$(echo "${times[$label]}" | tr ' ' '\n' | grep -v '^$' | sort -g | head -1)
    all=$(echo "${times[$label]}" | tr ' ' '\n' | grep -v '^$' | awk '{printf "%s%.1f", (NR > 1 ? ", " : ""), $1}')
    c=$(echo "${cpu[$label]}" | median)
    r=$(echo "${rss[$label]:-0}" | tr ' ' '\n' | grep -v '^$' | sort -n | tail -1)
    awk -v l="$label" -v m="$m" -v b="$b" -v all="$all" -v c="$c" -v p="$pip_median" -v pw="$pip_warm_median" \
        -v t="$bsdtar_median" -v k="$curl_median" -v bytes="$installed_bytes" -v r="$r" 'BEGIN {
      printf "| %s | %.2f | %.2f | %s | %.1f | %.0f | %.0f | %.2f× | %.2f× | %.2f× | %.2f× |\n", l, m, b, all, c, bytes / 1e6 / m, r / 1024, p / m, pw / m, t / m, m / k }'
  done
  echo
  echo "${#files[@]} wheels, $(echo "$wheel_bytes" | awk '{printf "%.2f GB", $1/1e9}') of wheels," \
       "$(echo "$installed_bytes" | awk '{printf "%.2f GB", $1/1e9}') installed, $(find "$work/www/files" -name '*.whl' -exec python3 -c 'import sys, zipfile; print(sum(len(zipfile.ZipFile(f).infolist()) for f in sys.argv[1:]))' {} + | awk '{s+=$1} END {print s}') members;" \
       "$repeat rounds; output on $(df --output=fstype "$out_root" | tail -1); index rate ${rate_mb:-unlimited} MB/s;" \
       "$(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/ {print $2}') GiB RAM;" \
       "load average (1 min) at each round's start and at the end: ${loads[*]};" \
       "$(python3 -m pip --version | cut -d' ' -f1-2), Python $(python3 -c 'import platform; print(platform.python_version())'), $(bsdtar --version | cut -d' ' -f1-2)."
  # Where the cold apply's time goes (its own report; download_s overlaps the unpacking).
  python3 - "$work"/apply-*.json <<'PY'
import json, statistics, sys
rounds = [json.load(open(f))["timings"] for f in sys.argv[1:]]
keys = ["check_s", "download_s", "stage_s", "move_s", "verify_s", "commit_s", "total_s"]
print()
print("Cold apply, its report's phases (median s): " + ", ".join(
    f"{k[:-2]} {statistics.median(r[k] for r in rounds):.2f}" for k in keys) + ".")
PY
  if [ -n "$cgroup" ]; then
    echo
    echo "The ${cgroup_mb} MiB memory cgroup: peak usage (page cache included)" \
         "$(( $(cat "$cgroup/memory.max_usage_in_bytes") >> 20 )) MiB, failcnt $(cat "$cgroup/memory.failcnt")," \
         "OOM kills $(awk '/oom_kill /{print $2}' "$cgroup/memory.oom_control")."
  fi
} | tee "${markdown:-/dev/null}"
