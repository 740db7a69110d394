// The analysis behind `doctor`, `why` and the planner: read the venv, pick the targets, follow
// every soname they load the way ld.so would, check the files their distributions own, and
// collect findings. Read-only, except for the hash cache under <venv>/.venvfix/.
#pragma once

#include <functional>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/dist/file_check.hpp"
#include "venvfix/dist/inventory.hpp"
#include "venvfix/elf/resolver.hpp"
#include "venvfix/env/host.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/manifest/manifests.hpp"
#include "venvfix/pep/marker.hpp"
#include "venvfix/verify/finding.hpp"

namespace venvfix::verify {

enum class HashCheck { target_libraries, everything };

struct Options {
  std::vector<std::string> targets;  // --target; empty: torch when installed, else every ELF holder
  HashCheck hashes = HashCheck::target_libraries;
  // When valid, the files are stat'ed only once it is ready: `run` snapshots while it analyses,
  // and the snapshot's new store links change ctimes, which key the hash cache.
  std::shared_future<void> stat_files_after;
  // `run`'s analysis after its command: each distribution of `earlier_inventory` (the analysis
  // before it) whose metadata directory `unchanged_metadata` says the command did not touch is
  // moved from there instead of read again. Null: every distribution is read.
  dist::Inventory* earlier_inventory = nullptr;
  std::function<bool(const fs::path&)> unchanged_metadata;
  // The ELF reads of the loading check. `run` passes the same one to its analyses before and
  // after its command, told in between that the files may have changed: the analysis after
  // reads again only the ELF files whose stat differs. Null: a new one.
  std::shared_ptr<elf::ElfSource> elf_source;
  // `run`'s analysis after its command: the identities its comparison with the snapshot found
  // (that stat is as recent as any the file check would make: the venv is locked and the command
  // has ended), so the file check stats only the files it does not know.
  dist::KnownIdentity identity_now;
};

struct Target {
  std::size_t dist = 0;               // index into Inventory::distributions
  int cuda_major = 0;                 // 0: not a CUDA build
  std::string cuda_version;           // "12.8" when known
  std::vector<fs::path> elf_objects;  // absolute paths of its ELF objects, sorted
};

// One soname as one consumer loads it.
struct SonameUse {
  std::string soname;
  fs::path consumer;    // absolute
  bool dlopen = false;  // loaded with dlopen by bare soname (a manifest family member)
  // How it resolves: on a way of loading torch where it resolves, when there is one (see
  // torch_preload.hpp), else on the first way where it fails.
  elf::Resolution resolution;
  // The ways of loading torch on which it fails although it resolves on another (empty when
  // it fails on none, or on all).
  std::vector<std::string> fails_when;
};

struct Analysis {
  env::Venv venv;
  env::HostPlatform host;
  pep::MarkerEnvironment markers;
  dist::Inventory inventory;
  std::vector<Target> targets;
  std::vector<bool> needed;  // per distribution: some target needs it
  // The widest form of torch's Python-side preload (the whole table): what the load check
  // preloads and what the planner counts as loadable.
  std::vector<fs::path> preloaded;
  // What the analysis had to assume because manifests/ do not establish it (how a torch
  // build preloads), one sentence each.
  std::vector<std::string> assumptions;
  std::vector<SonameUse> uses;  // every resolution in the targets' load closures
  // Every file inside the venv that the targets load (their objects, what their needs bind to,
  // the preloads), lexically normalised and sorted: these are always hash-checked.
  std::vector<fs::path> loaded_libraries;
  std::vector<Finding> findings;
  // Facts that are no finding: what only the host can provide and this host lacks (the GPU
  // driver's libcuda.so.1 on a machine without a GPU); each an unresolved-soname finding.
  std::vector<Finding> notes;

  bool has_problems(Strict strict) const;
  std::vector<std::string> target_list() const;  // normalised names
  std::string target_names() const;              // joined with ", " for messages
  // Path relative to the site-packages holding it, for messages; absolute when outside.
  std::string display_path(const fs::path& path) const;
};

// Where a distribution sits, as findings and plans name it: "" for the environment's own
// layer, "base" for the base prefix a venv with include-system-site-packages sees, "system" for
// one a system package manager installed (in a system dist-packages directory, with an
// INSTALLER other than pip, uv or venvfix): never removed or replaced by a plan.
std::string layer_label(const env::Venv& venv, const dist::Distribution& dist);

Result<Analysis> analyze(env::Venv venv, const manifest::Manifests& manifests,
                         const elf::SystemView& system, const Options& options);

}  // namespace venvfix::verify
