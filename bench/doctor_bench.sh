#!/usr/bin/env bash
# Benchmark: `venvfix doctor` on a torch-sized venv (about 30,000 files and 400 ELF objects,
# installed by pip from the test world) side by side with `pip check` and `ldd` run on every
# ELF object, whole-process timings with hyperfine; then `doctor --verify-hashes` hashing
# throughput over about 2.4 GB of real NVIDIA libraries (the host's CUDA 13 runtime, linked
# into a distribution of the bench venv).
#
#   bench/doctor_bench.sh [WORK_DIR]
#
# Results go to stdout; docs/benchmarks.md records them with this command.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
bench_start venvfix-bench "${1:-}"
site=$(echo "$venv"/lib/python3*/site-packages)
cache="$work/world-big/hermetic/ld.so.cache"

files=$(find "$site" -type f | wc -l)
elf=$(find "$site" -type f -name '*.so*' -exec sh -c 'head -c4 "$1" | grep -q ELF && echo' _ {} \; | wc -l)
echo "venv: $venv"
echo "files under site-packages: $files; ELF objects: $elf; cores: $(nproc)"
echo

# One cold run fills the hash cache (<venv>/.venvfix); the timed runs are warm.
"$venvfix" --venv "$venv" --ld-cache "$cache" doctor >/dev/null || true
find "$site" -type f -name '*.so*' > "$work/elf-list"

hyperfine --warmup 2 --runs 10 -N -i \
  --export-markdown "$work/doctor.md" \
  -n "venvfix doctor" "$venvfix --venv $venv --ld-cache $cache doctor" \
  -n "pip check" "$venv/bin/python -m pip check" \
  -n "ldd on every ELF object" "xargs -a $work/elf-list -n 1 ldd"
cat "$work/doctor.md"
echo

# Hashing throughput: a distribution whose RECORD lists the host's real CUDA libraries.
cuda_lib=/usr/local/cuda-13.0/lib
if [ -d "$cuda_lib" ]; then
  python3 - "$site" "$cuda_lib" <<'PY'
import base64, hashlib, os, shutil, sys
site, source = sys.argv[1], sys.argv[2]
target = os.path.join(site, "cuda_payload")
info = os.path.join(site, "cuda_payload-1.0.dist-info")
os.makedirs(target, exist_ok=True)
os.makedirs(info, exist_ok=True)
rows = []
for name in sorted(os.listdir(source)):
    src = os.path.join(source, name)
    if not os.path.isfile(src) or os.path.islink(src) or ".so" not in name:
        continue
    dst = os.path.join(target, name)
    if not os.path.exists(dst):
        try:
            os.link(src, dst)  # same bytes, no copy; the source is never written
        except OSError:
            shutil.copyfile(src, dst)
    h = hashlib.sha256()
    with open(dst, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()
    rows.append(f"cuda_payload/{name},sha256={digest},{os.path.getsize(dst)}")
with open(os.path.join(info, "METADATA"), "w") as f:
    f.write("Metadata-Version: 2.1\nName: cuda-payload\nVersion: 1.0\n")
with open(os.path.join(info, "RECORD"), "w") as f:
    f.write("\n".join(rows + ["cuda_payload-1.0.dist-info/METADATA,,", "cuda_payload-1.0.dist-info/RECORD,,"]) + "\n")
PY
  bytes=$(du -sb --apparent-size "$site/cuda_payload" | cut -f1)
  cat "$site/cuda_payload"/* > /dev/null  # page cache warm: measure hashing, not the disk
  hyperfine --runs 5 -N -i --export-markdown "$work/hash.md" \
    --prepare "rm -f $venv/.venvfix/hash-cache-v1" \
    -n "venvfix doctor --verify-hashes (cold hash cache)" \
    "$venvfix --venv $venv --ld-cache $cache doctor --verify-hashes" \
    -n "sha256sum, one core" "sh -c 'sha256sum $site/cuda_payload/* > /dev/null'"
  cat "$work/hash.md"
  echo "payload: $bytes bytes"
  rm -rf "$site/cuda_payload" "$site/cuda_payload-1.0.dist-info"
fi
