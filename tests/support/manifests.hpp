// The manifests/ of this checkout, as the tests that analyse or plan venvs read them.
#pragma once

#include "venvfix/manifest/manifests.hpp"

namespace venvfix::testing {

// Loaded once per process. Throws std::runtime_error with the loader's message when they do not
// load, which fails the calling test.
const manifest::Manifests& manifests();

}  // namespace venvfix::testing
