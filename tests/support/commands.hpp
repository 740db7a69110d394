// The commands the end-to-end tests run on the test world, set up one way: the venvfix binary
// against one index and cache with the world's hermetic loader view, commands in the hermetic
// mount namespace (support/hermetic.hpp), and pip without the machine's configuration.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/hermetic.hpp"
#include "support/world.hpp"

namespace venvfix::testing {

// Runs `argv` in the hermetic view (behind hermetic_prefix(), where this process may) with an
// empty LD_LIBRARY_PATH.
CommandResult run_hermetic(const std::vector<std::string>& argv, int timeout_seconds = 120);

// `<venv>/bin/python -m pip <args>` with neither the machine's pip configuration nor a prompt
// or version check; `extra_env` adds to (or overrides) that environment.
CommandResult run_pip(const fs::path& venv, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& extra_env = {});

enum class Hermetic { yes, no };

// How a test runs the venvfix binary: `venvfix <selector> WHERE --index-url <index_url>
// --cache-dir <cache_dir> --ld-cache <the world's hermetic cache> <options> ARGS`, with an
// empty LD_LIBRARY_PATH and `env`, inside the hermetic namespace when `hermetic` says so and it
// is available (then a dlopen of the load check sees no host CUDA either).
// (Every member has an initializer: a designated initializer may leave any of them out.)
struct VenvfixCli {
  std::string index_url = {};
  fs::path cache_dir = {};
  std::vector<std::string> options = {};  // before the command: "-q", "--timeout", "5"
  Hermetic hermetic = Hermetic::yes;
  std::string selector = "--venv";
  std::map<std::string, std::string> env = {};
  int timeout_seconds = 300;
  // A command that runs venvfix: its argv, then venvfix's ("unshare", "-m", …, "exec \"$@\"").
  std::vector<std::string> launcher = {};
};

CommandResult run_venvfix(const VenvfixCli& cli, const fs::path& where,
                          const std::vector<std::string>& args);

}  // namespace venvfix::testing
