#!/usr/bin/env bash
# Apply benchmark: staging a plan of several large wheels (~1.5 GB, bench/make_big_wheels.py)
# from a loopback index, with venvfix next to `pip install --no-deps` of the same wheels and
# `bsdtar -xf` of them one after another (the sequential floor), side by side in one run.
#
#   bench/apply_bench.sh [--total-mb 1500] [--repeat 3] [--work DIR] [--out DIR] [--keep]
#                        [--markdown FILE]
#
# Rows (wall time of the whole process, fresh output directory each time, `sync` before each
# run so no run pays for the previous one's writeback; no run fsyncs its own output):
# - venvfix, cold cache: resolve each project on the index, download (fetch::Downloader, 6 at
#   once) and stage each wheel with wheel::install_wheel as soon as its download completes
#   (download_each), on the index server's loopback.
# - venvfix, cached wheels: the same with every wheel already in the download cache (re-apply).
# - venvfix stage only, parallel / streaming: install_wheel of the local wheel files with the
#   parallel unpacker, and with the one-thread libarchive reference (Unpack::streaming).
# - pip install --no-deps --no-compile from the index into a fresh venv: cold (--no-cache-dir)
#   and with pip's cache warm.
# - bsdtar -xf of the local wheel files one after another.
# The venvfix rows use bench/unpack_bench.cpp (built here, Release, with -DVENVFIX_BENCH=ON),
# which stages the way `venvfix apply` does; once apply is merged this script can time it too.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
total_mb=1500
repeat=3
work=""
out_root=""
keep=0
markdown=""
while [ $# -gt 0 ]; do
  case "$1" in
    --total-mb) total_mb=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out_root=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --markdown) markdown=$2; shift 2 ;;
    *) echo "usage: $0 [--total-mb N] [--repeat N] [--work DIR] [--out DIR] [--keep] [--markdown FILE]" >&2; exit 2 ;;
  esac
done

if [ -z "$work" ]; then work=$(mktemp -d /var/tmp/venvfix-apply-bench.XXXXXX); fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
if [ -z "$out_root" ]; then out_root="$work"; fi
out_root=$(mkdir -p "$out_root/venvfix-bench-out" && cd "$out_root/venvfix-bench-out" && pwd)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$out_root"
  if [ "$keep" = 0 ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

# --- the venvfix side -------------------------------------------------------------------------
build="$work/build"
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
echo "building unpack_bench (Release)..." >&2
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVENVFIX_BENCH=ON \
  -DVENVFIX_TESTS=OFF -DVENVFIX_WERROR=OFF "${launcher[@]}" > "$work/cmake.log"
ninja -C "$build" -j "$(nproc)" unpack_bench > "$work/ninja.log"
driver="$build/bench/unpack_bench"

# --- the wheels, the index and a venv ---------------------------------------------------------
python3 "$repo/bench/make_big_wheels.py" "$work/www" --total-mb "$total_mb"
names=(); files=()
for page in "$work"/www/simple/*/; do names+=("$(basename "$page")"); done
for f in "$work"/www/files/*.whl; do files+=("$f"); done
wheel_bytes=$(cat "${files[@]}" | wc -c)
installed_bytes=$(python3 -c 'import sys, zipfile; print(sum(i.file_size for f in sys.argv[1:] for i in zipfile.ZipFile(f).infolist()))' "${files[@]}")

python3 "$repo/tests/servers/index_server.py" --root "$work/www" > "$work/server.out" &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/server.out" ] && break; sleep 0.1; done
index="http://127.0.0.1:$(head -1 "$work/server.out")/simple"
python3 -m venv --without-pip "$work/venv"

# --- the runs ---------------------------------------------------------------------------------
now() { date +%s.%N; }
# CPU seconds (user + system) of every child this shell has waited for: on a shared machine
# the wall time depends on the other load, the CPU time much less.
# (`times` runs in this shell: in a $(...) subshell it would see no children.)
cpu_now() { times > "$work/times.txt"; cpu_seconds=$(tail -1 "$work/times.txt" | sed 's/[ms]/ /g' | awk '{print $1 * 60 + $2 + $3 * 60 + $4}'); }
declare -A times cpu
run() {  # run LABEL COMMAND... (in a fresh output directory $out)
  local label=$1; shift
  out="$out_root/out"; rm -rf "$out"; mkdir -p "$out"
  sync
  local start end cpu_start cpu_end
  cpu_now; cpu_start=$cpu_seconds
  start=$(now)
  "$@" > "$work/last.log" 2>&1 || { echo "$label failed:" >&2; cat "$work/last.log" >&2; exit 1; }
  end=$(now)
  cpu_now; cpu_end=$cpu_seconds
  times[$label]+="$(echo "$end - $start" | bc) "
  cpu[$label]+="$(echo "$cpu_end - $cpu_start" | bc) "
}
fresh_venv() { cp -a "$work/venv" "$out/venv"; }
venvfix_cold() {
  fresh_venv; mkdir -p "$out/staging"
  "$driver" --venv "$out/venv" --staging "$out/staging" --index-url "$index/" --cache-dir "$out/cache" "${names[@]}"
}
warm_caches() {  # untimed: fill venvfix's download cache and pip's cache once
  mkdir -p "$out_root/warm-stage"
  "$driver" --venv "$work/venv" --staging "$out_root/warm-stage" --index-url "$index/" \
    --cache-dir "$out_root/warm-cache" "${names[@]}" > /dev/null
  rm -rf "$out_root/warm-stage"
  python3 -m venv --without-pip "$out_root/pip-warm-venv"
  PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip --python "$out_root/pip-warm-venv/bin/python" install -q \
    --no-deps --no-compile --cache-dir "$out_root/pip-cache" --index-url "$index/" "${names[@]}"
  rm -rf "$out_root/pip-warm-venv"
  sync
}
venvfix_cached() {
  fresh_venv; mkdir -p "$out/staging"
  "$driver" --venv "$out/venv" --staging "$out/staging" --index-url "$index/" --cache-dir "$out_root/warm-cache" "${names[@]}"
}
stage_parallel() { fresh_venv; mkdir -p "$out/staging"; "$driver" --venv "$out/venv" --staging "$out/staging" "${files[@]}"; }
stage_streaming() { fresh_venv; mkdir -p "$out/staging"; "$driver" --venv "$out/venv" --staging "$out/staging" --streaming "${files[@]}"; }
pip_install() {
  fresh_venv
  PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip --python "$out/venv/bin/python" install -q --no-deps \
    --no-compile "$@" --index-url "$index/" "${names[@]}"
}
pip_cold() { pip_install --no-cache-dir; }
pip_warm() { pip_install --cache-dir "$out_root/pip-cache"; }
bsdtar_seq() { for f in "${files[@]}"; do bsdtar -xf "$f" -C "$out"; done; }

labels=("venvfix: download + stage (cold cache)" "venvfix: stage from cached wheels (re-apply)"
        "venvfix: stage local files, parallel" "venvfix: stage local files, streaming (1 thread)"
        "pip install --no-deps (--no-cache-dir)" "pip install --no-deps (warm pip cache)"
        "bsdtar -xf, one after another")
echo "warming the caches..." >&2
warm_caches
loads=()
for r in $(seq "$repeat"); do
  echo "round $r of $repeat..." >&2
  loads+=("$(cut -d' ' -f1 /proc/loadavg)")
  run "${labels[0]}" venvfix_cold
  run "${labels[1]}" venvfix_cached
  run "${labels[2]}" stage_parallel
  run "${labels[3]}" stage_streaming
  run "${labels[4]}" pip_cold
  run "${labels[5]}" pip_warm
  run "${labels[6]}" bsdtar_seq
done
loads+=("$(cut -d' ' -f1 /proc/loadavg)")
rm -rf "$out_root/out" "$out_root/warm-cache" "$out_root/pip-cache"

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
pip_median=$(echo "${times[${labels[4]}]}" | median)
pip_warm_median=$(echo "${times[${labels[5]}]}" | median)
bsdtar_median=$(echo "${times[${labels[6]}]}" | median)
{
  echo "| run | median s | best s | all s | CPU s (median) | installed MB/s | pip (cold) ÷ this | pip (warm) ÷ this | bsdtar ÷ this |"
  echo "|---|---:|---:|---|---:|---:|---:|---:|---:|"
  for label in "${labels[@]}"; do
    m=$(echo "${times[$label]}" | median)
    b=$(echo "${times[$label]}" | tr ' ' '\n' | grep -v '^$' | sort -g | head -1)
    all=$(echo "${times[$label]}" | tr ' ' '\n' | grep -v '^$' | awk '{printf "%s%.1f", (NR > 1 ? ", " : ""), $1}')
    c=$(echo "${cpu[$label]}" | median)
    awk -v l="$label" -v m="$m" -v b="$b" -v all="$all" -v c="$c" -v p="$pip_median" -v pw="$pip_warm_median" \
        -v t="$bsdtar_median" -v bytes="$installed_bytes" 'BEGIN {
      printf "| %s | %.2f | %.2f | %s | %.1f | %.0f | %.2f× | %.2f× | %.2f× |\n", l, m, b, all, c, bytes / 1e6 / m, p / m, pw / m, t / m }'
  done
  echo
  echo "${#files[@]} wheels, $(echo "$wheel_bytes" | awk '{printf "%.2f GB", $1/1e9}') of wheels," \
       "$(echo "$installed_bytes" | awk '{printf "%.2f GB", $1/1e9}') installed, $(find "$work/www/files" -name '*.whl' -exec python3 -c 'import sys, zipfile; print(sum(len(zipfile.ZipFile(f).infolist()) for f in sys.argv[1:]))' {} + | awk '{s+=$1} END {print s}') members;" \
       "$repeat rounds; output on $(df --output=fstype "$out_root" | tail -1);" \
       "$(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/ {print $2}') GiB RAM;" \
       "load average (1 min) at each round's start and at the end: ${loads[*]};" \
       "$(python3 -m pip --version | cut -d' ' -f1-2), Python $(python3 -c 'import platform; print(platform.python_version())'), $(bsdtar --version | cut -d' ' -f1-2)."
} | tee "${markdown:-/dev/null}"
