# Shared by the bench scripts (sourced, from the repository root): the set-up, a Release build of
# venvfix, and the torch-sized venv of the test world.

# Dependencies (scripts/setup.sh is idempotent) and hyperfine.
bench_setup() {
  scripts/setup.sh
  if ! command -v hyperfine >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null
  fi
}

# Builds build/release/venvfix (Release, no tests) and prints its absolute path.
bench_release_build() {
  local build_dir=build/release
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVENVFIX_TESTS=OFF >/dev/null
  cmake --build "$build_dir" >/dev/null
  echo "$PWD/$build_dir/venvfix"
}

# bench_big_venv WORK [NAME]: the test world's `big` scenario at WORK/NAME (default big; pip
# installs torch 2.8.0+cu128 with its pins plus eight large distributions, --no-compile: about
# 29,000 files and 400 ELF objects under site-packages), made afresh from the world cached at
# WORK/world-big. Prints its path.
bench_big_venv() {
  local work=$1 name=${2:-big}
  python3 tests/world/world.py build --big --out "$work/world-big" >/dev/null
  rm -rf "${work:?}/$name"
  python3 tests/world/world.py scenario big --world "$work/world-big" --out "$work/$name" >/dev/null
  echo "$work/$name"
}

# bench_start PREFIX [WORK_DIR]: bench_setup, the Release build, and the `big` venv; sets
# `venvfix`, `work` (WORK_DIR, else a new temporary directory named PREFIX.XXXXXX) and `venv`.
bench_start() {
  bench_setup
  venvfix=$(bench_release_build)
  work=${2:-$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")}
  mkdir -p "$work"
  venv=$(bench_big_venv "$work")
}
