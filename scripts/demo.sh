#!/usr/bin/env bash
# The demo: build venvfix, generate the test world (real ELF libraries, real wheels, a local
# PEP 503/691 index), let pip break a venv the way the mission describes, then the whole story:
# doctor -> plan -> apply --snapshot -> import torch works -> a guarded `pip uninstall` gets
# rolled back -> `venvfix rollback` to the broken state.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build_dir=${VENVFIX_DEMO_BUILD_DIR:-build/release}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVENVFIX_TESTS=OFF >/dev/null
cmake --build "$build_dir"
venvfix="$PWD/$build_dir/venvfix"

work=$(mktemp -d "${TMPDIR:-/tmp}/venvfix-demo.XXXXXX")
echo "== generating the test world in $work (wheels, index, pip-made venvs)"
python3 tests/world/world.py build --out "$work/world" >/dev/null
python3 tests/world/world.py scenario seed --world "$work/world" --out "$work/venv" >/dev/null
cache="$work/world/hermetic/ld.so.cache"

show() { printf '\n$ %s\n' "$*"; }

show "pip list | grep -i cudnn     # pip installed cu12 cuDNN, then cu13 over it, then uninstalled cu13"
"$work/venv/bin/python" -m pip list 2>/dev/null | grep -i cudnn || true

if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
  show "python -c 'import torch'     # with the host's own CUDA hidden from the loader"
  tests/world/hermetic_run.sh "$cache" -- "$work/venv/bin/python" -c "import torch" 2>&1 | tail -1 || true
fi

show "venvfix doctor               # the loader's view: the venv alone"
"$venvfix" --venv "$work/venv" --ld-cache "$cache" doctor || true

show "venvfix doctor               # the host's view: a system cuDNN hides the hole"
"$venvfix" --venv "$work/venv" doctor || true

show "venvfix why libcudnn.so.9"
"$venvfix" --venv "$work/venv" --ld-cache "$cache" why libcudnn.so.9 || true

# The local index (PEP 503/691 on 127.0.0.1) the repair downloads from.
python3 tests/world/index_server.py --root "$work/world/index" --port 0 >"$work/index.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$work/index.log" ] && break; sleep 0.1; done
index_url="http://127.0.0.1:$(head -1 "$work/index.log")/simple"
vf=("$venvfix" --venv "$work/venv" --ld-cache "$cache" --index-url "$index_url" --cache-dir "$work/cache")

show "venvfix plan -o plan.json    # the wheels that restore every soname torch needs"
"${vf[@]}" plan -o "$work/plan.json" || true
"${vf[@]}" plan || true

show "venvfix apply --snapshot plan.json"
"${vf[@]}" apply --snapshot --yes "$work/plan.json"

if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
  show "python -c 'import torch'     # the host's CUDA still hidden: the venv's own cuDNN loads"
  tests/world/hermetic_run.sh "$cache" -- "$work/venv/bin/python" -c "import torch; print('import torch: ok')"
fi

show "venvfix doctor"
"${vf[@]}" doctor

show "venvfix run -- pip uninstall -y nvidia-cudnn-cu12   # what broke the venv in the first place"
"${vf[@]}" run -- "$work/venv/bin/python" -m pip uninstall -y nvidia-cudnn-cu12 || echo "(exit $?: rolled back)"

show "venvfix doctor               # still healthy"
"${vf[@]}" doctor

show "venvfix snapshot list"
"${vf[@]}" snapshot list

show "venvfix rollback             # back to the state before apply (the broken one)"
"${vf[@]}" rollback
"${vf[@]}" doctor || echo "(exit $?: the ghost is back, as before apply)"

echo
echo "The demo venv stays in $work (remove it with: rm -rf $work)"
