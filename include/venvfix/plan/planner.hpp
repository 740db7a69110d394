// The planner behind `venvfix plan` (and `venvfix uninstall`, `venvfix apply` without a plan):
// from the analysis of a venv, the exact wheels whose installation restores every soname the
// targets need, the removals that end a CUDA mix, and why each was chosen. docs/plan.md has
// the rules and the document; docs/doctor.md says what counts as a problem, and docs/cli.md
// how the commands that plan are called.
//
// make_plan changes nothing in the venv. It reads the index (project pages, PEP 658 metadata)
// only when there is something to plan, and downloads a wheel only when the index gives no
// sha256 or size for it, or no metadata for a meta-package it must follow (into the download
// cache, which apply reuses). It also hashes the few files a removal keeps (through the venv's
// hash cache).
#pragma once

#include <string>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/index/client.hpp"
#include "venvfix/manifest/manifests.hpp"
#include "venvfix/plan/document.hpp"
#include "venvfix/verify/analysis.hpp"

namespace venvfix::plan {

struct PlanOptions {
  // Also remove distributions of another CUDA major than the target's that do not conflict,
  // when every target still resolves afterwards.
  bool remove_foreign_cuda = false;
  // Plan uninstalling these distributions (any spelling) without breaking a target: their
  // remove actions (rule "uninstall") plus the installs that repair what the removal breaks
  // (rules starting with "repair:"). Problems the venv had before are left alone in this mode;
  // what cannot be repaired goes to Plan::unresolved.
  std::vector<std::string> uninstall;
};

// The state digest the plan carries: sha256 hex over the inventory the analysis read
// (site-packages directories relative to the venv, distributions with name, version,
// dist-info directory relative to the venv, Requires-Dist lines and every RECORD row, and the
// files the findings report missing, mismatched or clobbered). Deterministic; never includes
// absolute paths, inode numbers, times or what depends on the host (the loader's view).
std::string state_digest(const verify::Analysis& analysis);

// The same inventory per distribution (sorted by name, version, dist-info directory), each
// with a short digest of its own part: what `apply` compares to say what drifted.
std::vector<DistState> state_by_distribution(const verify::Analysis& analysis);

// What differs between a plan's distributions and the venv's now, in words: "torch 2.8.0 is
// 2.9.0 now; nvidia-cudnn-cu12 9.10.2.21 changed (its RECORD, metadata or files differ);
// foo 1.0 was added". When no distribution differs, says that the site-packages do.
std::string describe_drift(const std::vector<DistState>& planned,
                           const std::vector<DistState>& now);

// Makes the plan. Errors: an --uninstall name that is not installed (ExitCode::usage); an
// index that fails, a project or a pinned version missing from the index, no wheel for this
// platform (ExitCode::network, naming the index, the version, the tags tried, and what to do).
// Conflicting requirements and sonames nothing can provide are no error: they are entries of
// Plan::unresolved and the rest of the plan stands.
Result<Plan> make_plan(const verify::Analysis& analysis, const manifest::Manifests& manifests,
                       index::IndexClient& index, const PlanOptions& options);

// The wheel tags' view of the venv's interpreter on this host (for select_wheel).
pep::TargetPython target_python(const verify::Analysis& analysis);

}  // namespace venvfix::plan
