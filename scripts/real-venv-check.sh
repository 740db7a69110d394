#!/usr/bin/env bash
# The read-only check of issue 11 on a real CUDA torch venv (a lent GPU machine):
#
#   scripts/real-venv-check.sh VENV VENVFIX OUT
#
# VENV is never written: doctor, doctor --probe and why run on it as it is; the guarded
# uninstall and the refused uninstall run on a `cp -a` copy in a temporary directory. Every
# output goes to OUT/<step>.{json,txt} with its exit status in OUT/summary.txt.
set -uo pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 VENV VENVFIX OUT" >&2
  exit 2
fi
venv=$(realpath "$1") venvfix=$2 out=$3
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"

step() {  # step NAME EXPECTED_EXIT CMD...
  local name=$1 expected=$2
  shift 2
  timeout 120 "$@" >"$out/$name.out" 2>"$out/$name.err"
  local rc=$?
  echo "$name: exit $rc (expected $expected)" >>"$summary"
}

step doctor 0 "$venvfix" --venv "$venv" --json doctor
step doctor-probe 0 "$venvfix" --venv "$venv" --json doctor --probe
step why-libcudnn 0 "$venvfix" --venv "$venv" why libcudnn.so.9

copy_dir=$(mktemp -d)
trap 'rm -rf "$copy_dir"' EXIT
cp -a "$venv" "$copy_dir/venv"
step run-pip-uninstall 5 "$venvfix" --venv "$copy_dir/venv" --json run -- \
  "$copy_dir/venv/bin/python" -m pip uninstall -y nvidia-cudnn-cu13
step uninstall-refused 3 "$venvfix" --venv "$copy_dir/venv" --json uninstall nvidia-cudnn-cu13
cat "$summary"
