#include "support/manifests.hpp"

#include <stdexcept>

#include "support/paths.hpp"

namespace venvfix::testing {

const manifest::Manifests& manifests() {
  static const manifest::Manifests loaded = [] {
    auto result = manifest::Manifests::load(source_dir() / "manifests");
    if (!result) throw std::runtime_error(result.error().message);
    return std::move(result).value();
  }();
  return loaded;
}

}  // namespace venvfix::testing
