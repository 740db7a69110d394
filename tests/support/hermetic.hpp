// Commands in the hermetic loader view (tests/world/hermetic_run.sh: a private mount namespace
// where the host's CUDA directories are hidden and /etc/ld.so.cache is the world's), so that a
// venv's own libraries decide what loads, as the contract's note on these machines asks.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "support/world.hpp"

namespace venvfix::testing {

// The words to put before a command to run it in the hermetic view; empty where this process
// cannot (not root, no unshare): the command then runs in the host's view.
std::vector<std::string> hermetic_prefix();

// `VENV/bin/python -c "import torch"` in the hermetic view, LD_LIBRARY_PATH empty.
CommandResult import_torch(const std::filesystem::path& venv);

}  // namespace venvfix::testing
