#!/usr/bin/env bash
# Download benchmark: venvfix's downloader against curl (sequential and --parallel) and
# `pip download --no-deps`, side by side in one run, on wheels totalling about 1.1 GB served
# by tests/servers/index_server.py on 127.0.0.1 (sendfile, keep-alive, ranges).
#
#   bench/download_bench.sh [--total-mb 1080] [--parallel 6] [--repeat 3] [--work DIR]
#                           [--out DIR] [--keep] [--markdown FILE]
#
# Every tool downloads the same wheels into a fresh directory (venvfix: a fresh cache), and
# whole-process wall times are measured. venvfix and pip resolve each project through the
# simple index first and check every sha256 the index gives; curl is given the file URLs and
# hashes nothing ("curl + sha256sum" shows what hashing costs it). venvfix also runs once more
# on its warm cache (nothing downloaded, every blob re-hashed).
#
# venvfix fsyncs every wheel before it enters the cache (the contract: a cache entry is never
# partial after a crash); curl and pip leave dirty pages behind. "curl (sequential) + sync"
# fsyncs curl's files too, the fair baseline where the disk is slower than the network. --out
# puts every tool's output (and venvfix's cache) elsewhere, e.g. on a tmpfs (/dev/shm) to take
# the disk out of the comparison.
#
# The venvfix side is bench/download_driver.cc, compiled here with -O2 against the
# base, pep, index and fetch sources only (no CMake build tree needed).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
total_mb=1080
parallel=6
repeat=3
work=""
out_root=""
keep=0
markdown=""
while [ $# -gt 0 ]; do
  case "$1" in
    --total-mb) total_mb=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out_root=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --markdown) markdown=$2; shift 2 ;;
    *) echo "usage: $0 [--total-mb N] [--parallel N] [--repeat N] [--work DIR] [--out DIR] [--keep] [--markdown FILE]" >&2; exit 2 ;;
  esac
done

if [ -z "$work" ]; then work=$(mktemp -d /var/tmp/venvfix-download-bench.XXXXXX); fi
mkdir -p "$work"
if [ -z "$out_root" ]; then out_root="$work"; fi
out_root=$(mkdir -p "$out_root/venvfix-bench-out" && cd "$out_root/venvfix-bench-out" && pwd)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$out_root"
  if [ "$keep" = 0 ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

# --- the venvfix driver ------------------------------------------------------------------------
driver="$work/venvfix-download"
sources=("$repo"/src/base/*.cpp "$repo"/src/pep/*.cpp "$repo"/src/index/*.cpp "$repo"/src/fetch/*.cpp)
stale=1
if [ -x "$driver" ]; then
  stale=$(find "$repo/include" "$repo/src/base" "$repo/src/pep" "$repo/src/index" "$repo/src/fetch" \
            "$repo/bench/download_driver.cc" -newer "$driver" | head -1 | wc -l)
fi
if [ "$stale" != 0 ]; then
  echo "compiling the venvfix driver (-O2, ${#sources[@]} sources)..." >&2
  rm -rf "$work/obj"; mkdir -p "$work/obj"
  flags=(-std=c++20 -O2 -DNDEBUG -I"$repo/include" -I"$repo/src" -DVENVFIX_VERSION='"bench"'
         -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB -DFMT_SHARED)
  printf '%s\n' "${sources[@]}" "$repo/bench/download_driver.cc" |
    xargs -P "$(nproc)" -I{} sh -c 'c++ "$@" -c "{}" -o "'"$work"'/obj/$(echo "{}" | tr / _).o"' _ "${flags[@]}"
  c++ -O2 "$work"/obj/*.o -o "$driver" -lcurl -lssl -lcrypto -lspdlog -lfmt -lpthread
fi

# --- the wheels and the index ------------------------------------------------------------------
if [ -f "$work/www/.total_mb" ] && [ "$(cat "$work/www/.total_mb")" = "$total_mb" ]; then
  echo "reusing the wheels in $work/www" >&2
else
rm -rf "$work/www"
echo "writing ~${total_mb} MB of wheels..." >&2
python3 - "$work/www" "$total_mb" <<'PY'
import hashlib, os, random, sys, zipfile
root, total_mb = sys.argv[1], int(sys.argv[2])
# A torch-like mix: a few large wheels and several small ones (MB, scaled to total_mb).
shape = [300, 200, 150, 100, 100, 80, 60, 40, 30, 20]
scale = total_mb / sum(shape)
os.makedirs(os.path.join(root, "files"), exist_ok=True)
rng = random.Random(20240229)
for i, mb in enumerate(shape):
    name = "benchpkg%02d" % i
    wheel = "%s-1.0-py3-none-any.whl" % name
    path = os.path.join(root, "files", wheel)
    size = int(mb * scale * 1024 * 1024)
    metadata = "Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n" % name
    wheel_text = "Wheel-Version: 1.0\nGenerator: venvfix-bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        # Incompressible, as .so files mostly are; written in chunks (randbytes has a limit).
        with z.open("%s/payload.bin" % name, "w", force_zip64=True) as member:
            left = size
            while left > 0:
                chunk = min(left, 16 << 20)
                member.write(rng.randbytes(chunk))
                left -= chunk
        z.writestr("%s-1.0.dist-info/METADATA" % name, metadata)
        z.writestr("%s-1.0.dist-info/WHEEL" % name, wheel_text)
        z.writestr("%s-1.0.dist-info/RECORD" % name, "")
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(16 << 20), b""):
            sha.update(block)
    digest = sha.hexdigest()
    page_dir = os.path.join(root, "simple", name)
    os.makedirs(page_dir, exist_ok=True)
    with open(os.path.join(page_dir, "index.html"), "w") as out:
        out.write('<a href="../../files/%s#sha256=%s">%s</a>\n' % (wheel, digest, wheel))
PY
echo "$total_mb" > "$work/www/.total_mb"
fi
names=(); files=()
for page in "$work"/www/simple/*/; do names+=("$(basename "$page")"); done
for f in "$work"/www/files/*.whl; do files+=("$(basename "$f")"); done
total_bytes=$(cat "$work"/www/files/*.whl | wc -c)

python3 "$repo/tests/servers/index_server.py" --root "$work/www" > "$work/server.out" &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/server.out" ] && break; sleep 0.1; done
port=$(head -1 "$work/server.out")
base="http://127.0.0.1:$port"
index="$base/simple"

# --- the runs ----------------------------------------------------------------------------------
now() { date +%s.%N; }
declare -A times
run() {  # run LABEL COMMAND... (in a fresh output directory $out)
  local label=$1; shift
  out="$out_root/out"; rm -rf "$out"; mkdir -p "$out"
  local start end
  start=$(now)
  "$@" > "$work/last.log" 2>&1 || { echo "$label failed:" >&2; cat "$work/last.log" >&2; exit 1; }
  end=$(now)
  times[$label]+="$(echo "$end - $start" | bc) "
}
curl_args() { for f in "${files[@]}"; do printf -- '-o\n%s/%s\n%s/files/%s\n' "$out" "$f" "$base" "$f"; done; }
curl_seq() { mapfile -t a < <(curl_args); curl --fail -sS "${a[@]}"; }
curl_par() { mapfile -t a < <(curl_args); curl --fail -sS --parallel --parallel-max "$parallel" "${a[@]}"; }
curl_seq_hash() { curl_seq && sha256sum "$out"/*.whl > /dev/null; }
curl_seq_sync() { curl_seq && sync "$out"/*.whl; }
pip_download() {
  PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip download --no-deps --no-cache-dir -q \
    -d "$out" --index-url "$index/" "${names[@]}"
}
venvfix_cold() { "$driver" --index-url "$index/" --cache-dir "$out/cache" --parallel "$parallel" "${names[@]}"; }
venvfix_warm() {
  if [ ! -d "$out_root/warm-cache" ]; then
    "$driver" --index-url "$index/" --cache-dir "$out_root/warm-cache" --quiet "${names[@]}" > /dev/null
  fi
  "$driver" --index-url "$index/" --cache-dir "$out_root/warm-cache" --parallel "$parallel" "${names[@]}"
}
venvfix_one() { "$driver" --index-url "$index/" --cache-dir "$out/cache" --parallel 1 "${names[@]}"; }

labels=("curl (sequential)" "curl --parallel $parallel" "curl (sequential) + sha256sum"
        "curl (sequential) + sync"
        "pip download --no-deps" "venvfix (parallel $parallel)" "venvfix (parallel 1)"
        "venvfix (warm cache)")
for r in $(seq "$repeat"); do
  echo "round $r of $repeat..." >&2
  run "curl (sequential)" curl_seq
  run "curl --parallel $parallel" curl_par
  run "curl (sequential) + sha256sum" curl_seq_hash
  run "curl (sequential) + sync" curl_seq_sync
  run "pip download --no-deps" pip_download
  run "venvfix (parallel $parallel)" venvfix_cold
  run "venvfix (parallel 1)" venvfix_one
  run "venvfix (warm cache)" venvfix_warm
done
rm -rf "$out_root/out" "$out_root/warm-cache"

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
curl_median=$(echo "${times["curl (sequential)"]}" | median)
{
  echo "| tool | median s | best s | MB/s (median) | throughput vs curl sequential |"
  echo "|---|---:|---:|---:|---:|"
  for label in "${labels[@]}"; do
    m=$(echo "${times[$label]}" | median)
    b=$(echo "${times[$label]}" | tr ' ' '\n' | grep -v '^$' | sort -g | head -1)
    awk -v l="$label" -v m="$m" -v b="$b" -v c="$curl_median" -v bytes="$total_bytes" 'BEGIN {
      printf "| %s | %.2f | %.2f | %.0f | %.2f× |\n", l, m, b, bytes / 1e6 / m, c / m }'
  done
  echo
  echo "$(echo "$total_bytes" | awk '{printf "%.2f GB", $1/1e9}') in ${#files[@]} wheels, $repeat rounds," \
       "output on $(df --output=fstype "$out_root" | tail -1), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(curl --version | head -1 | cut -d' ' -f1-2)," \
       "$(python3 -m pip --version | cut -d' ' -f1-2), Python $(python3 -c 'import platform; print(platform.python_version())')."
} | tee "${markdown:-/dev/null}"
