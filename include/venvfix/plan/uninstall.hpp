// The plan `venvfix uninstall` applies: the removal alone when it breaks nothing
// (plan/breakage.hpp); otherwise a refusal (exit 3), the removal with what it breaks (--force),
// or the planner's plan that also reinstalls what it breaks (--repair, the only case that reads
// the index).
#pragma once

#include <string>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/index/client.hpp"
#include "venvfix/manifest/manifests.hpp"
#include "venvfix/plan/breakage.hpp"
#include "venvfix/plan/document.hpp"
#include "venvfix/verify/analysis.hpp"

namespace venvfix::plan {

enum class UninstallMode { refuse, repair, force };

struct UninstallPlan {
  Plan plan;
  // What the removal breaks: left broken (force), or repaired by the plan's installs (repair);
  // empty when it breaks nothing.
  std::vector<Break> breaks;
};

// Errors: a name that is not installed (ExitCode::usage); a removal that would break a target
// with UninstallMode::refuse, or one no reinstall repairs with UninstallMode::repair
// (ExitCode::problems, naming what breaks, the targets and what to do; the venv unchanged);
// with UninstallMode::repair, what make_plan fails with (an index failure: ExitCode::network).
Result<UninstallPlan> plan_uninstall(const verify::Analysis& analysis,
                                     const manifest::Manifests& manifests,
                                     index::IndexClient& index,
                                     const std::vector<std::string>& names, UninstallMode mode);

}  // namespace venvfix::plan
