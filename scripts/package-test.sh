#!/usr/bin/env bash
# Builds the Debian package the way a release does (Release build, `cpack -G DEB`), checks what
# it holds and that its Depends came from dpkg-shlibdeps (and, for the three libraries venvfix
# dlopens, from their shlibs files), then installs it with apt into a clean Debian 12 root made by
# debootstrap, runs `venvfix --version` and `venvfix doctor` of a venv made inside that root,
# and loads there the libcurl and libarchive sonames the binary names, and libcrypto as a doctor
# that hashes loads it. Needs root (chroot) and the Debian mirror; the root is cached as a
# tarball under ~/.cache/venvfix-package-test so a rerun does not download it again.
#
#   scripts/package-test.sh            # everything
#   VENVFIX_PACKAGE_ONLY=1 scripts/package-test.sh   # build and inspect the .deb, no chroot
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir=$PWD
build_dir=${VENVFIX_PACKAGE_BUILD_DIR:-build/release}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
fail() { echo "package-test: $*" >&2; exit 1; }
step() { printf '\n== %s (%ss)\n' "$1" "$SECONDS"; }

step "Release build of the CLI"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVENVFIX_TESTS=OFF \
  -DVENVFIX_WERROR=ON >/dev/null
cmake --build "$build_dir" --target venvfix_cli
version=$(sed -n 's/^project(venvfix VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)

step "cpack -G DEB"
rm -rf "$build_dir/package"
(cd "$build_dir" && cpack -G DEB -B package >/dev/null)
deb=$(ls "$build_dir"/package/venvfix_"$version"_*.deb 2>/dev/null | head -1)
[[ -f $deb ]] || fail "cpack made no venvfix_${version}_*.deb in $build_dir/package"
echo "$deb"

step "what the package holds"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libcurl libarchive libssl libelf libdeflate libisal libc6 libstdc++6; do
  [[ $depends == *"$lib"* ]] || fail "Depends lacks $lib: $depends"
done
contents=$(dpkg-deb -c "$deb")
for file in ./usr/bin/venvfix ./usr/share/venvfix/manifests/torch.json \
  ./usr/share/venvfix/manifests/nvidia-wheels.json ./usr/share/man/man1/venvfix.1 \
  ./usr/share/bash-completion/completions/venvfix; do
  grep -q " $file\$" <<<"$contents" || fail "$deb lacks $file"
done
[[ ${VENVFIX_PACKAGE_ONLY:-0} == 1 ]] && { echo "package-test: package checked (no chroot)"; exit 0; }

[[ $(id -u) == 0 ]] || fail "the chroot part needs root (VENVFIX_PACKAGE_ONLY=1 skips it)"
command -v debootstrap >/dev/null || fail "debootstrap is not installed (scripts/setup.sh)"
root=$(mktemp -d /tmp/venvfix-debian-root.XXXXXX)
cleanup() {
  for m in proc dev/pts dev; do mountpoint -q "$root/$m" && umount -l "$root/$m"; done
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT

step "a clean Debian 12 root"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/venvfix-package-test
tarball=$cache/bookworm-minbase.tgz
mirror=${VENVFIX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$cache"
if [[ ! -f $tarball ]]; then
  debootstrap --variant=minbase --include=python3,python3-venv --make-tarball="$tarball.part" \
    bookworm "$root/.tarball-work" "$mirror" >/dev/null
  mv "$tarball.part" "$tarball"
  rm -rf "$root/.tarball-work"
fi
debootstrap --variant=minbase --include=python3,python3-venv --unpack-tarball="$tarball" \
  bookworm "$root" "$mirror" >/dev/null
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"

step "apt install ./$(basename "$deb") in it"
cp "$deb" "$root/tmp/"
chroot "$root" apt-get update -qq
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  "/tmp/$(basename "$deb")" >/dev/null

step "venvfix runs there"
chroot "$root" venvfix --version | tee "$root/tmp/version.txt"
grep -q "^venvfix $version (manifests of [0-9-]*, /usr/share/venvfix/manifests)" \
  "$root/tmp/version.txt" || fail "unexpected --version output"
chroot "$root" python3 -m venv "/tmp/a venv"
status=0
chroot "$root" venvfix --venv "/tmp/a venv" --json doctor >"$root/tmp/doctor.json" || status=$?
[[ $status == 0 ]] || fail "venvfix doctor in the Debian root exited $status: $(cat "$root/tmp/doctor.json")"
chroot "$root" python3 -c '
import json, sys
d = json.load(open("/tmp/doctor.json"))
assert d["schema"] == "venvfix-doctor/1", d["schema"]
print("doctor in the clean root:", d["schema"], "findings:", len(d["findings"]))'
# libcurl, libarchive and libcrypto are not linked but dlopened when a command downloads,
# unpacks or hashes: the sonames the binary asks for must load in the root its Depends made.
for soname in libcurl.so.4 libarchive.so.13; do
  grep -qaF "$soname" "$root/usr/bin/venvfix" || fail "/usr/bin/venvfix does not name $soname"
  chroot "$root" python3 -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$soname" ||
    fail "$soname does not load in the root the package's Depends made"
done
# libcrypto's soname fits in a short string the compiler builds from immediates, so the binary
# holds no copy of it to grep: the loader, asked to log, says whether a doctor that hashes every
# file of the venv (pip's, by their RECORD) loads it there.
chroot "$root" env LD_DEBUG=files venvfix --venv "/tmp/a venv" doctor --verify-hashes \
  >/dev/null 2>"$root/tmp/ld-debug.txt" || true
grep -q "file=libcrypto.so.3 \[0\];  dynamically loaded by" "$root/tmp/ld-debug.txt" ||
  fail "doctor --verify-hashes did not load libcrypto.so.3 in the clean root"
echo "libcurl.so.4, libarchive.so.13 and libcrypto.so.3 load in the clean root"
chroot "$root" sh -c 'man -w venvfix >/dev/null 2>&1 || test -f /usr/share/man/man1/venvfix.1'
echo "package-test: ok in ${SECONDS}s"
