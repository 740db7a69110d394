#!/usr/bin/env bash
# Benchmark: what `venvfix run` and the guard cost on a torch-sized venv (the test world's `big`
# scenario, as bench/doctor_bench.sh makes it: about 29,000 files and 400 ELF objects installed by
# pip), side by side in one interleaved run (bench/interleaved.py: medians, CPU times, load):
#
#   python -m pip --version               the start of pip itself: the yardstick of `run`
#   venvfix run -- true                   warm: a snapshot store present, the hash cache warm
#   venvfix doctor                        warm
#   pip install --no-deps SMALL.whl       --force-reinstall of a one-module wheel, three ways:
#                                         the guard off; on; on with VENVFIX_GUARD=0
#   venvfix snapshot prune --keep 10      after a `snapshot create`: one snapshot deleted, the
#                                         ten kept ones read for the store links only it held
#
# With BASELINE=/path/to/venvfix (say a Release build of main), `run -- true`, `doctor`, the
# guarded install and the prune are timed with that binary too, in the same rounds, on a second venv made the
# same way (each binary keeps its own .venvfix/ state).
#
# Before that it shows where `run -- true` spends its time: `venvfix -v -v` phase timings and an
# `strace -c -f` summary. Every venvfix call (the guard's included) resolves with the world's
# hermetic ld.so.cache ($VENVFIX_LD_CACHE).
#
#   nice bench/run_bench.sh [WORK_DIR]
#   env: ROUNDS (default 10), WARMUP (default 2), BASELINE, GUARD_FILL (default 10)
#
# Results go to stdout; docs/benchmarks.md records them with this command.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
bench_start venvfix-run-bench "${1:-}"
export VENVFIX_LD_CACHE="$work/world-big/hermetic/ld.so.cache"

# The small wheel, made by the test world's own wheel writer.
python3 - "$work" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, "tests/world")
from wheelgen import Wheel
Wheel(name="venvfix-bench-small", version="1.0", tags=["py3-none-any"], purelib=True,
      files={"venvfix_bench_small/__init__.py": b"VALUE = 1\n"}).write(Path(sys.argv[1]))
PY
wheel=$(echo "$work"/venvfix_bench_small-1.0-py3-none-any.whl)

site=$(echo "$venv"/lib/python3*/site-packages)
echo "venv: $venv"
echo "files: $(find "$venv" -type f | wc -l); directories: $(find "$venv" -type d | wc -l); ELF objects under site-packages: $(find "$site" -name '*.so*' | wc -l); cores: $(nproc)"
echo "venvfix: $venvfix ($("$venvfix" --version))"

pip_install="bin/pip install --no-deps --no-index --force-reinstall --disable-pip-version-check -q $wheel"
# warm BINARY VENV: the store holds every file (a kept snapshot), the hash cache is filled, the
# last walk is recorded, and the small wheel is installed, so that each timed install replaces it.
# Then GUARD_FILL (default 10, the guard's default limit) guarded installs: a guard at its limit
# deletes its oldest snapshot after every install, which is what a guarded venv pays from then on.
warm() {
  "$1" --venv "$2" -q snapshot create
  "$1" --venv "$2" doctor >/dev/null || true
  "$1" --venv "$2" run -- true
  "$1" --venv "$2" guard disable >/dev/null
  "$2/bin/pip" install --no-deps --no-index --force-reinstall --disable-pip-version-check -q "$wheel"
  "$1" --venv "$2" guard enable >/dev/null
  for _ in $(seq 1 "${GUARD_FILL:-10}"); do $2/$pip_install; done
  "$1" --venv "$2" guard disable >/dev/null
}
warm "$venvfix" "$venv"
# prune_copy BINARY VENV NAME: a copy of VENV for the prune row, holding 10 snapshots of its own,
# so that the row's prune never deletes the guard rows' snapshots (a guard below its limit prunes
# nothing). Prints its path.
prune_copy() {
  local copy=$work/$3
  rm -rf "$copy"
  cp -a "$2" "$copy"
  "$1" --venv "$copy" -q snapshot prune --keep 0 >/dev/null
  for _ in $(seq 1 10); do "$1" --venv "$copy" -q snapshot create >/dev/null; done
  echo "$copy"
}
prune_venv=$(prune_copy "$venvfix" "$venv" big-prune)
rows=(
  -n '`python -m pip --version`' -c "$venv/bin/python -m pip --version"
  -n '`venvfix run -- true` (warm)' -c "$venvfix --venv $venv run -- true"
  -n '`venvfix doctor` (warm)' -c "$venvfix --venv $venv doctor"
  -n '`pip install --no-deps SMALL.whl`, no guard'
  -p "$venvfix --venv $venv guard disable" -c "$venv/$pip_install"
  -n '… guard on' -p "$venvfix --venv $venv guard enable" -c "$venv/$pip_install"
  -n '… guard on, `VENVFIX_GUARD=0`' -p "$venvfix --venv $venv guard enable"
  -c "VENVFIX_GUARD=0 $venv/$pip_install"
  -n '`venvfix snapshot prune --keep 10` (11 kept: reads 10)'
  -p "$venvfix --venv $prune_venv -q snapshot create"
  -c "$venvfix --venv $prune_venv snapshot prune --keep 10"
)
if [ -n "${BASELINE:-}" ]; then
  base_venv=$(bench_big_venv "$work" big-baseline)
  echo "baseline: $BASELINE ($("$BASELINE" --version)) on $base_venv"
  warm "$BASELINE" "$base_venv"
  base_prune_venv=$(prune_copy "$BASELINE" "$base_venv" big-baseline-prune)
  rows+=(
    -n '`venvfix run -- true` (warm), baseline' -c "$BASELINE --venv $base_venv run -- true"
    -n '`venvfix doctor` (warm), baseline' -c "$BASELINE --venv $base_venv doctor"
    -n '… guard on, baseline' -p "$BASELINE --venv $base_venv guard enable"
    -c "$base_venv/$pip_install"
    -n '`venvfix snapshot prune --keep 10`, baseline'
    -p "$BASELINE --venv $base_prune_venv -q snapshot create"
    -c "$BASELINE --venv $base_prune_venv snapshot prune --keep 10"
  )
fi
echo

echo "## Where \`venvfix run -- true\` spends its time"
echo
echo '```'
"$venvfix" --venv "$venv" -v -v run -- true 2>&1 | sed -e 's/^\[[^]]*\] //' |
  grep -E 'snapshot|analysis:|checked|changed nothing|store' || true
strace -f -c -o "$work/strace.txt" "$venvfix" --venv "$venv" run -- true
head -12 "$work/strace.txt"
echo '```'
echo

echo "## Side by side"
echo
python3 bench/interleaved.py --rounds "${ROUNDS:-10}" --warmup "${WARMUP:-2}" "${rows[@]}"
"$venvfix" --venv "$venv" guard disable >/dev/null
echo
echo "snapshots the guarded installs kept: $("$venvfix" --venv "$venv" snapshot list | grep -c 'bin/pip' || true) (the guard keeps 10)"
if [ -n "${BASELINE:-}" ]; then
  echo "… baseline: $("$BASELINE" --venv "$base_venv" snapshot list | grep -c 'bin/pip' || true)"
fi
echo "store links: $(ls "$venv/.venvfix/store" | wc -l)$([ -z "${BASELINE:-}" ] || echo ", baseline $(ls "$base_venv/.venvfix/store" | wc -l)")"
