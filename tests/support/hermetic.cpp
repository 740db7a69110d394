#include "support/hermetic.hpp"

namespace venvfix::testing {

std::vector<std::string> hermetic_prefix() {
  if (!hermetic_available()) return {};
  return {hermetic_runner().string(), test_world().hermetic_cache.string(), "--"};
}

CommandResult import_torch(const std::filesystem::path& venv) {
  std::vector<std::string> argv = hermetic_prefix();
  argv.insert(argv.end(), {(venv / "bin/python").string(), "-c", "import torch"});
  return run_command(argv, {{"LD_LIBRARY_PATH", ""}}, 120);
}

}  // namespace venvfix::testing
