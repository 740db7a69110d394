// Where this checkout's sources and the venvfix binary under test are. The paths are compiled
// into one file only (tests/support/paths.cpp), so every other test object is identical across
// checkouts.
#pragma once

#include <filesystem>
#include <string>

namespace venvfix::testing {

std::filesystem::path source_dir();  // the repository root
std::string venvfix_binary();        // the built `venvfix` CLI

}  // namespace venvfix::testing
