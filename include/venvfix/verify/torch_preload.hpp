// What torch loads before anything else: torch/__init__.py's _load_global_deps and
// _preload_cuda_deps. Shared by the analysis (the venv as it is) and the planner (the venv as a
// plan leaves it).
//
// torch ctypes.CDLLs torch/lib/libtorch_global_deps.so first. When that raises OSError it
// preloads its whole table and tries again; when it succeeds, some releases preload nothing,
// some a few folders, the newest the whole table (manifests/torch.json, preload.rules). Where
// the sources do not establish which, every way is a candidate: the analysis reports a problem
// only when a library fails on all of them.
#pragma once

#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "venvfix/manifest/manifests.hpp"
#include "venvfix/verify/analysis.hpp"

namespace venvfix::verify {

namespace fs = std::filesystem;

// The names in a directory, sorted (glob order, as torch's preload sees them); empty when the
// directory does not exist.
using DirectoryListing = std::function<const std::vector<std::string>&(const fs::path& dir)>;

// The files torch's preload finds for `target` for the libraries of `way` (minus the folders in
// `exclude`): each glob of each library searched in every site-packages directory, pattern by
// pattern; the first match counts. In table order, each once; empty for a target that is not a
// CUDA build of torch.
std::vector<fs::path> torch_preload_files(const Analysis& analysis, const Target& target,
                                          const manifest::Manifests& manifests,
                                          const DirectoryListing& listing,
                                          const manifest::PreloadWay& way,
                                          std::span<const std::string> exclude = {});

// The widest preload: the whole table for every torch target built for CUDA (what the planner
// counts as loadable by torch).
std::vector<fs::path> torch_preloads(const Analysis& analysis, const manifest::Manifests& manifests,
                                     const DirectoryListing& listing);

// What manifests/torch.json says this target preloads after a successful load: the build's
// own record when the build is listed with one, else the rule for its version, else unknown
// (nothing or the whole table). Several ways mean the sources do not establish which.
struct PreloadChoice {
  std::vector<manifest::PreloadWay> on_success;
  std::vector<std::string> exclude;  // library folders its table does not have
  std::string basis;                 // where the choice comes from, for messages
};
PreloadChoice preload_choice(const Analysis& analysis, const Target& target,
                             const manifest::Manifests& manifests);

// "nothing", "the whole table", "cuda_nvrtc, nvjitlink": for messages.
std::string describe(const manifest::PreloadWay& way);

}  // namespace venvfix::verify
