#!/usr/bin/env bash
# The checked conventions (docs/CONTRIBUTING.md): formatting, function length, clang-tidy.
# Usage: scripts/lint.sh [BUILD_DIR]  (a configured build: clang-tidy reads its
# compile_commands.json). scripts/test.sh runs it before building.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build/asan}
mapfile -t files < <(git ls-files -- 'include/*.hpp' 'src/*.cpp' 'src/*.hpp' 'tests/*.cpp' \
  'tests/*.hpp' 'bench/*.cc' 'bench/*.cpp')
echo "lint: clang-format on ${#files[@]} files"
clang-format --dry-run -Werror "${files[@]}"
scripts/check-function-length.py
# clang-tidy over every unit of the build: the library and the CLI (src/, the public headers
# through them), the tests, and the benchmarks where the build has them (-DVENVFIX_BENCH=ON).
# tidy.py skips a listed file the build does not compile (tests/fuzz/, bench/ by default).
mapfile -t units < <(git ls-files -- 'src/*.cpp' 'tests/*.cpp' 'bench/*.cpp' 'bench/*.cc')
nice python3 scripts/tidy.py "$build_dir" "${units[@]}"
