// The planner's pieces, each in its own file (see include/venvfix/plan/planner.hpp for the
// whole and docs/plan.md for the rules):
//   index_view.cpp  the index with a page cache: pages, wheel choice, metadata, digests
//   pins.cpp        rule 1: the targets' Requires-Dist, meta-package extras followed
//   needs.cpp       what the findings ask for: sonames to restore, distributions to reinstall
//   remove.cpp      removals (CUDA mix, --remove-foreign-cuda, --uninstall) and what they keep
//   choose.cpp      the version rules and the wheel of each install
//   simulate.cpp    do the target sonames resolve after the plan?
//   planner.cpp     make_plan: the passes above until nothing changes
//   breakage.cpp    what a removal would break, without the index (plan/breakage.hpp)
//   uninstall.cpp   the plan `venvfix uninstall` applies (plan/uninstall.hpp)
//   layers.cpp      what a plan may not change: the base prefix, the system's distributions
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/dist/inventory.hpp"
#include "venvfix/index/client.hpp"
#include "venvfix/index/select.hpp"
#include "venvfix/manifest/manifests.hpp"
#include "venvfix/pep/requirement.hpp"
#include "venvfix/plan/planner.hpp"
#include "venvfix/verify/analysis.hpp"

namespace venvfix::plan::detail {

// The index with one page request per project per plan.
class IndexView {
 public:
  IndexView(index::IndexClient& client, pep::TargetPython target)
      : m_client(client), m_target(std::move(target)) {}

  // The project's page; an Error (ExitCode::network) when no index has the project.
  Result<const index::ProjectPage*> page(const std::string& name);
  // The best wheel of `name` for this interpreter and platform matching `specifier`.
  Result<index::Candidate> select(const std::string& name, const pep::SpecifierSet& specifier);
  // The candidate's METADATA: PEP 658 when the index serves it, else read from the wheel.
  Result<dist::CoreMetadata> metadata(const index::Candidate& candidate);
  // sha256 hex and size of the candidate; downloaded (into the cache) when the index gives
  // either not.
  struct Digest {
    std::string sha256;
    std::uint64_t size = 0;
  };
  Result<Digest> digest(const index::Candidate& candidate);

  const pep::TargetPython& target() const { return m_target; }
  // The index URLs, redacted, for messages.
  std::string index_names() const;

 private:
  index::IndexClient& m_client;
  pep::TargetPython m_target;
  std::map<std::string, index::ProjectPage> m_pages;
};

// One requirement of a target on a distribution (rule 1).
struct Pin {
  std::string name;  // normalised
  pep::SpecifierSet specifier;
  std::string requirement;  // "nvidia-cudnn-cu12==9.10.2.21" (marker left out)
  std::string required_by;  // the target
  std::string via;          // "cuda-toolkit[cublas,…]==13.0.2" when reached through its extras
};
using Pins = std::map<std::string, std::vector<Pin>>;  // by normalised name

// The targets' Requires-Dist (markers true for this venv) and, through every requirement with
// extras on a meta-package of manifests/ (cuda-toolkit), the meta-package's own Requires-Dist
// for those extras: from the installed meta-package when its version fits, else from the index.
Result<Pins> collect_pins(const verify::Analysis& analysis, const manifest::Manifests& manifests,
                          IndexView& index);

// A distribution the plan installs, before its version is chosen.
struct Want {
  std::string name;                 // normalised
  int cuda_major = 0;               // of the target it serves (0: any)
  std::set<std::string> sonames;    // target sonames it restores
  std::set<std::string> consumers;  // who needs them (display paths)
  std::vector<std::string> causes;  // phrases for the reason, in order, no duplicates
  bool reinstall = false;           // a ghost or clobbered installed distribution (rule 2)
  std::optional<pep::Requirement> requirement;  // an unmet requirement it satisfies
  std::string required_by;
  bool repair = false;  // repairs what a removal of the same plan breaks

  void add_cause(std::string cause);
};

// A removal of the plan.
struct Removal {
  std::size_t dist = 0;  // index into Inventory::distributions
  std::string rule;      // "conflicting-cuda", "foreign-cuda", "uninstall"
  std::string reason;
  bool optional = false;  // left out (a note) when a target would not resolve without it
};

// Everything that applies to one make_plan call.
struct Context {
  const verify::Analysis& analysis;
  const manifest::Manifests& manifests;
  const PlanOptions& options;
  std::set<std::size_t> uninstall;  // inventory indices named by --uninstall
  int cuda_major = 0;               // the targets' CUDA major (the first CUDA target's)

  const dist::Distribution& dist(std::size_t index) const {
    return analysis.inventory.distributions[index];
  }
  // The installed distribution of that (normalised) name, if any.
  const dist::Distribution* installed(const std::string& name) const;
  // Installed requirements on `name` (markers true for this venv), except those of the
  // distributions in `leaving`: (requirement, who requires it).
  std::vector<std::pair<pep::Requirement, std::string>> requirements_on(
      const std::string& name, const std::set<std::size_t>& leaving) const;
};

// The plan under construction.
struct Draft {
  std::map<std::string, Want> wants;  // by normalised name
  std::vector<Removal> removals;
  // Sonames to restore: soname -> consumers (display paths).
  std::map<std::string, std::set<std::string>> sonames;
  std::map<std::string, bool> soname_repair;  // soname -> needed because of a removal
  std::vector<Unresolved> unresolved;
  std::vector<Note> notes;
  std::set<std::string> unresolved_keys;

  Want& want(const std::string& name, int cuda_major);
  // Adds an unresolved entry once per key.
  void add_unresolved(const std::string& key, Unresolved entry);
  std::set<std::size_t> leaving() const;  // the removed distributions
};

// needs.cpp: what the findings ask for (the regular mode): ghost and clobbered distributions
// the targets need, unresolved and escaped sonames, unmet requirements on manifest
// distributions; and unresolved entries for what no install fixes (system libraries, split
// site-packages, shared paths left between two remaining owners).
void needs_from_findings(const Context& context, Draft& draft);
// Maps every soname of Draft::sonames to the distribution that provides it (pins, then a
// ghost or clobbered owner, then manifests/ for the target's CUDA major) and adds it to the
// wants; a soname nothing provides becomes an unresolved entry.
void providers_for_sonames(const Context& context, const Pins& pins, Draft& draft);
// (Called by providers_for_sonames.) The components a meta-package the plan installs pins
// through its extras (cuda-toolkit[cublas,…] -> nvidia-cublas==13.1.0.3.*): pip installs them
// with it, so they are wants too, unless installed at a version the pin admits.
void meta_components(const Context& context, const Pins& pins, Draft& draft);

// remove.cpp: the removals of the plan (conflicting foreign-CUDA distributions nothing else
// requires; with --remove-foreign-cuda the others too; --uninstall), except `dropped`.
Status plan_removals(const Context& context, const std::set<std::size_t>& dropped, Draft& draft);
// Paths of the removed distribution's RECORD that a remaining distribution also owns
// (site-packages-relative, sorted), and the remaining owners whose files at those paths do
// not hold their own bytes (hashed through the venv's hash cache): those get reinstalled.
struct Keep {
  std::vector<std::string> keep;  // relative to the removed distribution's site-packages
  std::vector<fs::path> removed;  // absolute paths that go
  std::map<std::size_t, std::vector<std::string>> damaged_owners;  // owner -> kept paths
};
Keep keep_for(const Context& context, std::size_t dist, const std::set<std::size_t>& leaving);

// A file an install adds, with what the manifests say about it (nullptr: not a manifest
// library, e.g. a reinstalled torch file).
struct AddedFile {
  fs::path path;  // absolute, lexically normal
  std::string soname;
  const manifest::Library* library = nullptr;
};
// An install of the plan with the files it adds.
struct Addition {
  Install action;
  std::vector<AddedFile> files;
};

// choose.cpp: the version and wheel of a want. nullopt when the requirements conflict (an
// unresolved entry names both); Error on an index failure or a pinned version with no wheel.
Result<std::optional<Addition>> choose(const Context& context, const Want& want, const Pins& pins,
                                       IndexView& index, Draft& draft);

// simulate.cpp: target sonames that do not resolve (or still resolve outside the venv) once
// the removals and installs are done.
struct Failure {
  std::string soname;
  std::set<std::string> needed_by;   // display paths
  bool escaped = false;              // found, but outside the venv
  std::string resolved_to;           // escaped: where
  bool regression = false;           // resolved inside the venv before the plan
  std::optional<std::size_t> cause;  // regression: the removal (Draft::removals index) to blame
};
// `keeps` is parallel to the draft's removals.
std::vector<Failure> simulate(const Context& context, const std::vector<Addition>& installs,
                              const std::vector<Keep>& keeps);

// planner.cpp: the plan's header (venv, python, platform, targets, state digest, findings,
// driver notes) before any action.
Plan start_plan(const verify::Analysis& analysis);
// Inventory indices of the named distributions; ExitCode::usage for one not installed.
Result<std::set<std::size_t>> uninstall_indices(const verify::Analysis& analysis,
                                                const std::vector<std::string>& names);
// The CUDA major of the first target built for CUDA (0: none).
int target_cuda_major(const verify::Analysis& analysis);
// Requirements on a distribution that --uninstall removes: unresolved when the targets need the
// requirer, a note otherwise.
void uninstall_requirements(const Context& context, Draft& draft);
// The unresolved entry of a soname the simulation finds failing.
Unresolved failure_entry(const Context& context, const Failure& failure, const Draft& draft);
// The remove action of a removal, with the paths it keeps.
Remove remove_action(const Context& context, const Removal& removal, const Keep& keep);

// "torch/lib/libtorch_cuda.so" or "torch/lib/libtorch_cuda.so and 3 more".
std::string first_and_more(const std::set<std::string>& items);
// The same for paths, a shared library first when there is one.
std::string first_paths(const std::vector<std::string>& paths);

// layers.cpp: a plan changes only the environment's own layer. A remove action of a
// distribution in the base prefix or owned by the system is dropped (an `unresolved` entry of
// kind "protected-layer" says why); an install that replaces a base distribution installs into
// the venv instead (no `replaces`: the venv shadows the base, as pip does); one that replaces a
// system distribution is dropped.
void keep_to_own_layer(const Context& context, Plan& plan);

}  // namespace venvfix::plan::detail
