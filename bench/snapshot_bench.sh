#!/usr/bin/env bash
# Snapshot + rollback of a torch-sized venv against `cp -a` of it, side by side in one run.
#
#   bench/snapshot_bench.sh [VENVFIX_BINARY]
#   env: BIG_GB (default 3: size of the big .so-like files), SMALL_FILES (default 30000),
#        BENCH_DIR (default: a new directory under $TMPDIR or /tmp; removed afterwards)
#
# The venv is generated: BIG_GB of large files (like libtorch_cuda.so, libcudnn*.so: 24 files)
# of non-zero, non-sparse data, and SMALL_FILES small files (0.5-8 KiB, like .py and
# metadata) spread over ~1500 directories. Page cache is warm for every step (the data was
# just written); both sides get the same treatment. Two more rows for scale: `cp -al` of the
# same tree (hard links only, no data: what any hard-link snapshot costs at the least on this
# filesystem), and, where this user may drop the page cache (root), `cp -a` from a cold cache.
set -euo pipefail
venvfix=${1:-build/venvfix}
big_gb=${BIG_GB:-3}
small=${SMALL_FILES:-30000}
work=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/venvfix-snapshot-bench-XXXXXX")}
trap 'rm -rf "$work"' EXIT
venv=$work/venv
site=$venv/lib/python3.12/site-packages

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{(float(sys.argv[2])-float(sys.argv[1]))*1000:.0f}')" "$1" "$2"; }

echo "generating the venv in $work ($big_gb GB in 24 big files, $small small files)" >&2
mkdir -p "$venv/bin" "$site"
printf 'home = /usr/bin\nversion = 3.12.3\n' >"$venv/pyvenv.cfg"
head -c $((64 << 20)) /dev/urandom >"$work/chunk"
per_file_chunks=$(( (big_gb * 1024) / 64 / 24 ))
[ "$per_file_chunks" -ge 1 ] || per_file_chunks=1
for i in $(seq 1 24); do
  d=$site/nvidia/lib$((i % 8))/lib
  mkdir -p "$d"
  for _ in $(seq 1 "$per_file_chunks"); do cat "$work/chunk"; done >"$d/libbig$i.so.1"
done
python3 - "$site" "$small" <<'PY'
import os, random, sys
site, count = sys.argv[1], int(sys.argv[2])
random.seed(1)
blob = os.urandom(8192)
for i in range(count):
    d = os.path.join(site, f"pkg{i % 40}", f"sub{(i // 40) % 37}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"mod{i}.py"), "wb") as f:
        f.write(blob[: random.randint(512, 8192)])
PY
sync
files=$(find "$venv" -type f | wc -l)
bytes=$(du -sb "$venv" | cut -f1)

t0=$(now); cp -a "$venv" "$work/copy"; sync -f "$work/copy"; t1=$(now)
cp_ms=$(elapsed "$t0" "$t1")
rm -rf "$work/copy"
cold_ms=""
if sync && { echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null; then
  t0=$(now); cp -a "$venv" "$work/copy"; sync -f "$work/copy"; t1=$(now)
  cold_ms=$(elapsed "$t0" "$t1")
  rm -rf "$work/copy"
  # Warm again for the rest, as before.
  find "$venv" -type f -exec cat {} + > /dev/null
fi
t0=$(now); cp -al "$venv" "$work/links"; sync -f "$work/links"; t1=$(now)
links_ms=$(elapsed "$t0" "$t1")
rm -rf "$work/links"
sync

t0=$(now); "$venvfix" --venv "$venv" -q snapshot create >/dev/null; t1=$(now)
create_ms=$(elapsed "$t0" "$t1")
method=$("$venvfix" --venv "$venv" --json snapshot show | python3 -c 'import json,sys; print(json.load(sys.stdin)["method"])')

# What `pip uninstall` of a CUDA wheel does: a big library and a package's small files go.
rm -f "$site/nvidia/lib1/lib/libbig1.so.1" "$site/nvidia/lib1/lib/libbig9.so.1"
rm -rf "$site/pkg7"
t0=$(now); "$venvfix" --venv "$venv" -q rollback >/dev/null; t1=$(now)
rollback_ms=$(elapsed "$t0" "$t1")

total=$((create_ms + rollback_ms))
percent=$(python3 -c "print(f'{100*$total/$cp_ms:.2f}')")
links_percent=$(python3 -c "print(f'{100*$links_ms/$cp_ms:.2f}')")
cold_cell="not measured (page cache cannot be dropped here)"
if [ -n "$cold_ms" ]; then
  cold_cell="${cold_ms} ms (snapshot+rollback: $(python3 -c "print(f'{100*$total/$cold_ms:.2f}')") %)"
fi
cat <<TABLE
| venv | cp -a (+sync) | snapshot create ($method) | rollback after uninstall | snapshot+rollback vs cp -a | cp -al (+sync) vs cp -a | cp -a, cold page cache |
|---|---|---|---|---|---|---|
| $files files, $((bytes >> 20)) MiB | ${cp_ms} ms | ${create_ms} ms | ${rollback_ms} ms | ${percent} % | ${links_ms} ms, ${links_percent} % | ${cold_cell} |
TABLE
