#!/usr/bin/env bash
# Benchmark: `venvfix plan` on the torch-sized venv of the doctor benchmark (about 30,000 files
# and 400 ELF objects, installed by pip from the test world) with the world's index served on
# 127.0.0.1: whole-process timings with hyperfine of
#   - the healthy venv (the plan asks the index nothing), and
#   - the same venv with nvidia/cudnn/lib/libcudnn.so.9 deleted (the plan fetches the
#     nvidia-cudnn-cu12 page and picks the wheel), the issue's target being < 0.3 s wall;
# plus `venvfix doctor` on the same venvs for reference.
#
#   bench/plan_bench.sh [WORK_DIR]
#
# Results go to stdout; docs/benchmarks.md records them with this command.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if ! command -v hyperfine >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null
fi
build_dir=build/release
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVENVFIX_TESTS=OFF "${launcher[@]}" >/dev/null
cmake --build "$build_dir" >/dev/null
venvfix="$PWD/$build_dir/venvfix"

work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/venvfix-bench.XXXXXX")}
mkdir -p "$work"
python3 tests/world/world.py build --big --out "$work/world-big" >/dev/null
for name in big big-broken; do
  rm -rf "${work:?}/$name"
  python3 tests/world/world.py scenario big --world "$work/world-big" --out "$work/$name" >/dev/null
done
site=$(echo "$work"/big-broken/lib/python3*/site-packages)
rm "$site/nvidia/cudnn/lib/libcudnn.so.9"
cache="$work/world-big/hermetic/ld.so.cache"

# The index on loopback, stopped on exit.
python3 tests/world/index_server.py --root "$work/world-big/index" --port 0 > "$work/port" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
index="http://127.0.0.1:$(head -1 "$work/port")/simple"

files=$(find "$work/big/lib" -type f | wc -l)
echo "venv: $work/big ($files files under lib/); index: $index; cores: $(nproc)"
common="--ld-cache $cache --index-url $index --cache-dir $work/download-cache -q"
# One run each fills the hash cache (<venv>/.venvfix): the timed runs are warm, as a user's
# second command would be (doctor first, then plan).
for name in big big-broken; do
  "$venvfix" --venv "$work/$name" $common doctor >/dev/null || true
  "$venvfix" --venv "$work/$name" $common plan >/dev/null || true
done
{ "$venvfix" --venv "$work/big-broken" $common plan || true; } | head -5

hyperfine --warmup 2 --runs 10 -N -i --export-markdown "$work/plan.md" \
  -n "venvfix plan (healthy, no index request)" "$venvfix --venv $work/big $common plan" \
  -n "venvfix plan (cuDNN deleted, one index page)" "$venvfix --venv $work/big-broken $common plan" \
  -n "venvfix doctor (healthy)" "$venvfix --venv $work/big $common doctor" \
  -n "venvfix doctor (cuDNN deleted)" "$venvfix --venv $work/big-broken $common doctor"
cat "$work/plan.md"
