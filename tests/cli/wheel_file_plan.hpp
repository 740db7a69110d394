// How the end-to-end apply tests without an index begin: an empty venv, and a plan that
// installs one wheel file into it (a file:// URL with the wheel's hash and size).
#pragma once

#include <filesystem>
#include <string>

namespace venvfix::testing {

namespace fs = std::filesystem;

// `python3 -m venv --without-pip venv`; a failure is a test failure.
void make_empty_venv(const fs::path& venv);

// `venvfix plan` of `venv` (with `cache`), plus an action installing `wheel` as `dist` 1.0,
// written to `plan_file`.
void write_plan_installing(const fs::path& venv, const fs::path& cache, const fs::path& wheel,
                           const std::string& dist, const fs::path& plan_file);

}  // namespace venvfix::testing
