#!/usr/bin/env bash
# Installs everything venvfix needs to build and test, from Debian's packages.
# Idempotent and quiet when everything is already there.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libcurl4-openssl-dev libarchive-dev nlohmann-json3-dev libssl-dev
  libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libcli11-dev libelf-dev libdeflate-dev
  libisal-dev
  libbenchmark-dev
  clang clang-format clang-tidy universal-ctags git
  python3 python3-venv python3-pip
  # venvs made by another tool than `python -m venv` (tests/env/pyvenv_cfg_python_test.cpp)
  python3-virtualenv
  patchelf libarchive-tools openssl curl unzip zip ccache
  # the Ansible collection's tests: scripts/fleet-test.sh (ansible, sshd), the wheelhouse
  # (nginx), and integrations/ansible/tests/sanity.sh (ansible-test sanity's tools, offline)
  ansible openssh-server openssh-client nginx
  pylint yamllint python3-voluptuous pycodestyle
  # scripts/package-test.sh: the .deb's Depends (dpkg-shlibdeps) and a clean Debian 12 root;
  # the guard's shell-hook test runs bash on a pty with script(1) (util-linux)
  dpkg-dev debootstrap util-linux
  # the reflink snapshot test and benchmark make an XFS filesystem on a loop device
  xfsprogs
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq >/dev/null
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
