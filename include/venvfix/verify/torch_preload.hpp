// What torch loads before anything else: torch/__init__.py's _preload_cuda_deps. Shared by the
// analysis (the venv as it is) and the planner (the venv as a plan leaves it).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "venvfix/manifest/manifests.hpp"
#include "venvfix/verify/analysis.hpp"

namespace venvfix::verify {

namespace fs = std::filesystem;

// The names in a directory, sorted (glob order, as torch's preload sees them); empty when the
// directory does not exist.
using DirectoryListing = std::function<const std::vector<std::string>&(const fs::path& dir)>;

// For each torch target built for CUDA, each glob of each library folder of the manifests'
// preload table is searched in every site-packages directory, pattern by pattern; the first
// match is loaded with RTLD_GLOBAL. Returns those files (site-packages / pattern / name), in
// that order, each once.
std::vector<fs::path> torch_preloads(const Analysis& analysis, const manifest::Manifests& manifests,
                                     const DirectoryListing& listing);

}  // namespace venvfix::verify
