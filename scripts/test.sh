#!/usr/bin/env bash
# The whole test suite: set-up, a warnings-as-errors build with AddressSanitizer and UBSan,
# then every test through ctest. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build_dir=${VENVFIX_TEST_BUILD_DIR:-build/asan}
# ccache (when CMake finds it) shares objects between checkouts at different paths.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
# -O1 with line tables: what the sanitizers recommend, and half the compile time of -O2 -g on
# the 2-core CI machine.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DVENVFIX_SANITIZE=ON -DVENVFIX_WERROR=ON -DVENVFIX_CRASH_POINTS=ON >/dev/null
# The checked conventions first (format, function length, clang-tidy): they fail in seconds
# when warm, and a convention broken is a failed CI like a failed test.
scripts/lint.sh "$build_dir"
cmake --build "$build_dir"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 900
