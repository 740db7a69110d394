// What "broke a target" means, one rule for `venvfix run` (did the command break one?) and
// `venvfix uninstall` (would the removal break one?): a problem (as doctor rates it) that was
// not there before, of one of these kinds:
//   - a soname a target needs no longer resolves, or resolves outside the venv
//     (unresolved-soname, escaped-soname);
//   - a distribution the targets need has files missing or not holding its own bytes
//     (ghost-files);
//   - a requirement of a distribution the targets need on a native distribution (one
//     manifests/ knows) is unmet (unmet-requirement).
// Each break has a key, so that the state before and the state after compare.
#pragma once

#include <string>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/manifest/manifests.hpp"
#include "venvfix/plan/document.hpp"
#include "venvfix/verify/analysis.hpp"

namespace venvfix::plan {

// yes: reinstalling a distribution can fix it (`uninstall --repair`); no: only keeping what
// was to be removed can (an unmet requirement on it).
enum class Repairable { yes, no };

struct Break {
  std::string key;      // "unresolved-soname libcudnn.so.9", "ghost-files nvidia-cudnn-cu12", …
  std::string message;  // one sentence
  Repairable repairable = Repairable::yes;
};

// The breaks in an analysis: its problem findings of the kinds above, one per key.
std::vector<Break> breakage(const verify::Analysis& analysis);

// The breaks of `after` whose key `before` lacks, in after's order.
std::vector<Break> new_breaks(const std::vector<Break>& before, const std::vector<Break>& after);

// What uninstalling `names` (any spelling) the way `venvfix uninstall` does (every path a
// remaining distribution also owns is kept) would break, predicted without the index: the
// loader's search over the venv without the removed files, the kept files hashed, the
// remaining requirements. `removal` is the plan of the removal alone (rule "uninstall").
// Errors: a name that is not installed (ExitCode::usage).
struct UninstallBreakage {
  Plan removal;
  std::vector<Break> breaks;  // new ones only: the venv's own problems are left out
};
Result<UninstallBreakage> uninstall_breakage(const verify::Analysis& analysis,
                                             const manifest::Manifests& manifests,
                                             const std::vector<std::string>& names);

}  // namespace venvfix::plan
