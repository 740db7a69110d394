#!/usr/bin/env bash
# Snapshots of a torch-sized venv against `cp -al` and `cp -a` of it, side by side in one run,
# on the machine's disk and (as root, where a loop device can be had) on XFS with reflinks.
#
#   nice bench/snapshot_bench.sh [VENVFIX_BINARY]
#   env: BIG_GB (default 3: size of the big .so-like files; BIG_MB for less), SMALL_FILES (default 30000),
#        BASELINE (a second venvfix binary: its later pair in the same rounds, below),
#        ROUNDS (default 3; medians are reported), FILESYSTEMS (default "disk xfs"),
#        BENCH_DIR (default: a new directory under $TMPDIR or /tmp; removed afterwards),
#        PENDING_MB (a later pair more per binary, whose rollback starts with that much data
#        written to the same filesystem and not yet on the disk, as right after a pip install
#        that wrote large libraries: what a rollback waits for that is not its own)
#
# The venv is generated: BIG_GB of large files (like libtorch_cuda.so, libcudnn*.so: 24 files)
# of non-zero, non-sparse data, and SMALL_FILES small files (0.5-8 KiB, like .py and
# metadata) in 40 packages over ~1500 directories. Page cache warm for every step. Each round:
#   cp -a (+sync -f)        a full copy: the yardstick of the 2 % goal
#   cp -al (+sync -f)       hard links and directories only: the yardstick of the first snapshot
#   cp -a --reflink=always  (XFS only) a clone of every file: why the store holds hard links
#   first                   `snapshot create` with no .venvfix/ at all (every file linked into the
#                           store), then what `pip uninstall` of a CUDA wheel does (two big
#                           libraries and a 750-file package go), then `rollback`
#   later                   `snapshot create` again (the store holds every file: a stat pass),
#                           then what `pip install --force-reinstall` of that package does (its
#                           750 files rewritten: new inodes), then `rollback`
#   later, BASELINE         (with BASELINE=/path/to/venvfix in the environment, say a Release build
#                           of main) the same later pair once more with that binary, in the same
#                           round, on its own copy of the venv (made once, `cp -a --reflink=auto`,
#                           and snapshotted once by that binary before the rounds): a change's
#                           effect next to the spread of cp -a. Its own copy, because the two
#                           binaries may keep `.venvfix/` state differently (a record one writes
#                           that the other does not trust costs the other a full read)
#   later, floor            bench/pair_floor.cc, on its own copy of the venv: only the system
#                           calls any later pair must make (each directory fstat'ed and a list of
#                           inodes written durably; every file fstatat'ed, the 750 changed ones
#                           linked from a store, renamed away and renamed in, a journal and the
#                           directories fsync'ed), nothing venvfix adds (a manifest of modes,
#                           sizes and times, the lock, the store's check): how far the later pair
#                           is from what this filesystem allows
set -euo pipefail
venvfix=$(realpath "${1:-build/venvfix}")
big_mb=${BIG_MB:-$((${BIG_GB:-3} * 1024))}
small=${SMALL_FILES:-30000}
rounds=${ROUNDS:-3}
filesystems=${FILESYSTEMS:-disk xfs}
work=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/venvfix-snapshot-bench-XXXXXX")}
mnt="" loop=""
cleanup() {
  if [ -n "$mnt" ]; then umount "$mnt" || umount -l "$mnt" || true; fi
  if [ -n "$loop" ]; then losetup -d "$loop" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work"
pair_floor=$work/pair_floor
g++ -O2 -std=c++20 -pthread -o "$pair_floor" "$(dirname "$(realpath "$0")")/pair_floor.cc"

ms() { python3 -c "import sys; print(round((float(sys.argv[2])-float(sys.argv[1]))*1000))" "$1" "$2"; }
timed() {  # timed VAR command...: runs it, stores the milliseconds in VAR
  local var=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$@" >/dev/null
  t1=$(date +%s.%N)
  printf -v "$var" '%s' "$(ms "$t0" "$t1")"
}
median() { python3 -c "import statistics,sys; print(round(statistics.median(map(float,sys.argv[1:]))))" "$@"; }

generate() {  # generate ROOT
  local venv=$1 site=$1/lib/python3.12/site-packages
  mkdir -p "$venv/bin" "$site"
  printf 'home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n' >"$venv/pyvenv.cfg"
  local chunk_mb=64
  [ "$big_mb" -ge $((24 * 64)) ] || chunk_mb=1
  [ -f "$work/chunk" ] || head -c $((chunk_mb << 20)) /dev/urandom >"$work/chunk"
  local per_file_chunks=$((big_mb / chunk_mb / 24))
  [ "$per_file_chunks" -ge 1 ] || per_file_chunks=1
  for i in $(seq 1 24); do
    local d=$site/nvidia/lib$((i % 8))/lib
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
}

# What pip's --force-reinstall does to pkg7: every file written anew and renamed over its name.
reinstall_pkg7() {
  python3 - "$1/lib/python3.12/site-packages/pkg7" <<'PY'
import os, sys
for top, _, names in os.walk(sys.argv[1]):
    for name in names:
        path = os.path.join(top, name)
        data = open(path, "rb").read()
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.rename(path + ".tmp", path)
PY
}

# pending_pair VAR BINARY VENV DIR: a later pair whose rollback starts with PENDING_MB pending;
# the rollback's milliseconds in VAR.
pending_pair() {
  local var=$1 binary=$2 venv=$3 dir=$4
  sync
  "$binary" --venv "$venv" -q snapshot create >/dev/null
  reinstall_pkg7 "$venv"
  sync
  head -c $((PENDING_MB << 20)) /dev/zero >"$dir/pending"
  timed "$var" "$binary" --venv "$venv" -q rollback
  rm -f "$dir/pending"
  sync
}

bench_on() {  # bench_on LABEL DIR
  local label=$1 dir=$2 venv=$2/venv site=$2/venv/lib/python3.12/site-packages
  echo "[$label] generating the venv in $dir ($big_mb MiB in 24 big files, $small small files)" >&2
  generate "$venv"
  local files bytes
  files=$(find "$venv" -type f | wc -l)
  bytes=$(du -sb "$venv" | cut -f1)
  local cpa=() cpal=() clone=() fc=() fr=() lc=() lr=() blc=() blr=() linked_first="" linked_later=""
  local base_venv=$dir/venv-baseline floor_venv=$dir/venv-floor floor_state=$dir/floor-state
  local flc=() flr=() pr=() bpr=()
  cp -a --reflink=auto "$venv" "$floor_venv"
  "$pair_floor" setup "$floor_venv" "$floor_state"
  if [ -n "${BASELINE:-}" ]; then
    cp -a --reflink=auto "$venv" "$base_venv"
    "$BASELINE" --venv "$base_venv" -q snapshot create >/dev/null
  fi
  for r in $(seq 1 "$rounds"); do
    echo "[$label] round $r of $rounds" >&2
    timed t cp -a "$venv" "$dir/copy"; sync -f "$dir/copy"; cpa+=("$t")
    rm -rf "$dir/copy"
    timed t cp -al "$venv" "$dir/links"; sync -f "$dir/links"; cpal+=("$t")
    rm -rf "$dir/links"
    if [ "$label" = xfs ]; then
      timed t cp -a --reflink=always "$venv" "$dir/clone"; sync -f "$dir/clone"; clone+=("$t")
      rm -rf "$dir/clone"
    fi
    rm -rf "$venv/.venvfix"
    sync
    timed t "$venvfix" --venv "$venv" -q snapshot create; fc+=("$t")
    linked_first=$(find "$venv/.venvfix/store" -type f | wc -l)
    rm -f "$site/nvidia/lib1/lib/libbig1.so.1" "$site/nvidia/lib1/lib/libbig9.so.1"
    rm -rf "$site/pkg7"
    timed t "$venvfix" --venv "$venv" -q rollback; fr+=("$t")
    sync
    timed t "$venvfix" --venv "$venv" -q snapshot create; lc+=("$t")
    linked_later=$(($(find "$venv/.venvfix/store" -type f | wc -l) - linked_first))
    reinstall_pkg7 "$venv"
    sync
    timed t "$venvfix" --venv "$venv" -q rollback; lr+=("$t")
    if [ -n "${BASELINE:-}" ]; then
      sync
      timed t "$BASELINE" --venv "$base_venv" -q snapshot create; blc+=("$t")
      reinstall_pkg7 "$base_venv"
      sync
      timed t "$BASELINE" --venv "$base_venv" -q rollback; blr+=("$t")
    fi
    sync
    timed t "$pair_floor" create "$floor_venv" "$floor_state" 2>"$dir/floor.log"; flc+=("$t")
    reinstall_pkg7 "$floor_venv"
    sync
    timed t "$pair_floor" rollback "$floor_venv" "$floor_state" 2>>"$dir/floor.log"; flr+=("$t")
    rm -rf "$floor_state"/kept.*
    if [ -n "${PENDING_MB:-}" ]; then
      pending_pair t "$venvfix" "$venv" "$dir"; pr+=("$t")
      if [ -n "${BASELINE:-}" ]; then pending_pair t "$BASELINE" "$base_venv" "$dir"; bpr+=("$t"); fi
    fi
  done
  local m_cpa m_cpal m_fc m_fr m_lc m_lr first later
  m_cpa=$(median "${cpa[@]}") m_cpal=$(median "${cpal[@]}")
  m_fc=$(median "${fc[@]}") m_fr=$(median "${fr[@]}") m_lc=$(median "${lc[@]}") m_lr=$(median "${lr[@]}")
  first=$((m_fc + m_fr)) later=$((m_lc + m_lr))
  local clone_cell="-"
  [ ${#clone[@]} -gt 0 ] && clone_cell="$(median "${clone[@]}") ms"
  cat <<TABLE

$label ($(findmnt -no FSTYPE -T "$dir")): $files files, $((bytes >> 20)) MiB; medians of $rounds rounds (raw: cp -a ${cpa[*]}; cp -al ${cpal[*]}; first create ${fc[*]}, rollback ${fr[*]}; later create ${lc[*]}, rollback ${lr[*]})

| cp -a | cp -al | cp -a --reflink | first: create + rollback | ÷ cp -al | later: create + rollback | % of cp -a | store links: first, later |
|---|---|---|---|---|---|---|---|
| ${m_cpa} ms | ${m_cpal} ms | ${clone_cell} | ${m_fc} + ${m_fr} = ${first} ms | $(python3 -c "print(f'{$first/$m_cpal:.2f}x')") | ${m_lc} + ${m_lr} = ${later} ms | $(python3 -c "print(f'{100*$later/$m_cpa:.2f} %')") | ${linked_first}, ${linked_later} |
TABLE
  local m_flc m_flr
  m_flc=$(median "${flc[@]}") m_flr=$(median "${flr[@]}")
  echo
  echo "floor (bench/pair_floor.cc), later: create + rollback ${m_flc} + ${m_flr} = $((m_flc + m_flr)) ms," \
    "$(python3 -c "print(f'{100*($m_flc+$m_flr)/$m_cpa:.2f} %')") of cp -a (raw: create ${flc[*]}, rollback ${flr[*]});" \
    "its last round: $(tr '\n' ';' <"$dir/floor.log")"
  if [ ${#pr[@]} -gt 0 ]; then
    echo
    echo "later rollback with ${PENDING_MB} MiB pending: $(median "${pr[@]}") ms (raw: ${pr[*]})" \
      "${bpr[*]:+; BASELINE: $(median "${bpr[@]}") ms (raw: ${bpr[*]})}"
  fi
  if [ ${#blc[@]} -gt 0 ]; then
    local m_blc m_blr
    m_blc=$(median "${blc[@]}") m_blr=$(median "${blr[@]}")
    echo
    echo "BASELINE ($BASELINE), later: create + rollback ${m_blc} + ${m_blr} = $((m_blc + m_blr)) ms," \
      "$(python3 -c "print(f'{100*($m_blc+$m_blr)/$m_cpa:.2f} %')") of cp -a (raw: create ${blc[*]}, rollback ${blr[*]})"
  fi
}

for fs_name in $filesystems; do
  case $fs_name in
    disk)
      mkdir -p "$work/disk"
      bench_on disk "$work/disk"
      rm -rf "$work/disk"
      ;;
    xfs)
      if [ "$(id -u)" != 0 ] || ! command -v mkfs.xfs >/dev/null; then
        echo "xfs: skipped (needs root and mkfs.xfs)" >&2
        continue
      fi
      truncate -s $((big_mb * 3 / 1024 + 4))G "$work/xfs.img"
      mkfs.xfs -q -m reflink=1 "$work/xfs.img"
      if ! loop=$(losetup -f --show "$work/xfs.img"); then
        echo "xfs: skipped (no loop device)" >&2
        loop=""
        continue
      fi
      mkdir -p "$work/xfs"
      mount "$loop" "$work/xfs"
      mnt=$work/xfs
      bench_on xfs "$work/xfs"
      umount "$mnt"; mnt=""
      losetup -d "$loop"; loop=""
      ;;
  esac
done
