// Helpers for the CLI tests of snapshot, rollback, recover and run: the venvfix binary on
// test-world scenario venvs, with the loader's view limited to the world's hermetic cache.
#pragma once

#include <string>
#include <vector>

#include "support/paths.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/txn/fingerprint.hpp"

namespace venvfix::txn::testing {

inline venvfix::testing::CommandResult venvfix_cli(const fs::path& venv,
                                                   const std::vector<std::string>& args,
                                                   std::map<std::string, std::string> env = {}) {
  std::vector<std::string> argv = {venvfix::testing::venvfix_binary(), "--venv", venv.string(),
                                   "--ld-cache",
                                   venvfix::testing::test_world().hermetic_cache.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  env.emplace("LD_LIBRARY_PATH", "");
  return venvfix::testing::run_command(argv, env, 300);
}

inline Fingerprint print_of(const fs::path& root) {
  auto print = fingerprint_tree(root);
  return print ? *print : Fingerprint{};
}

}  // namespace venvfix::txn::testing
