#include "support/paths.hpp"

namespace venvfix::testing {

std::filesystem::path source_dir() {
  return VENVFIX_SOURCE_DIR;
}
std::string venvfix_binary() {
  return VENVFIX_BINARY;
}

}  // namespace venvfix::testing
