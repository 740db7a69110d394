// plan_uninstall: the breakage rule decides, without the index, whether `venvfix uninstall`
// may go ahead; only --repair of a removal that breaks something asks the planner (and so the
// index) for the reinstalls.
#include "venvfix/plan/uninstall.hpp"

#include <algorithm>
#include <set>

#include "venvfix/base/strings.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/plan/planner.hpp"

namespace venvfix::plan {

namespace {

std::vector<std::string> messages(const std::vector<Break>& breaks) {
  std::vector<std::string> out;
  out.reserve(breaks.size());
  for (const Break& b : breaks) out.push_back(b.message);
  return out;
}

Error refusal(const verify::Analysis& analysis, const std::vector<std::string>& names,
              const std::vector<std::string>& lines, bool repairable) {
  return make_error(ExitCode::problems,
                    "uninstalling {} would leave a problem for {}: {}; {}; the venv is unchanged",
                    join(names, ", "), analysis.target_names(), join(lines, "; "),
                    repairable ? "--repair reinstalls what it breaks in the same transaction, "
                                 "--force uninstalls anyway"
                               : "no repair can fix that; --force uninstalls anyway");
}

// The planner's unresolved entries that are not problems the venv had before the removal.
std::vector<std::string> unrepaired(const Plan& plan, const verify::Analysis& analysis) {
  std::set<std::string> existing;
  for (const verify::Finding& finding : analysis.findings) {
    if (finding.severity != verify::Severity::problem) continue;
    if (std::string_view soname = verify::soname_of(finding); !soname.empty()) {
      existing.insert(fmt::format("soname {}", soname));
    }
    if (!finding.dist.empty()) existing.insert("dist " + pep::normalize_name(finding.dist));
  }
  std::vector<std::string> out;
  for (const Unresolved& entry : plan.unresolved) {
    const std::string_view soname = soname_of(entry);
    const std::string& dist = dist_of(entry);
    if ((!soname.empty() && existing.count(fmt::format("soname {}", soname))) ||
        (!dist.empty() && existing.count("dist " + pep::normalize_name(dist)))) {
      continue;
    }
    out.push_back(message_of(entry));
  }
  return out;
}

}  // namespace

Result<UninstallPlan> plan_uninstall(const verify::Analysis& analysis,
                                     const manifest::Manifests& manifests,
                                     index::IndexClient& index,
                                     const std::vector<std::string>& names, UninstallMode mode) {
  VENVFIX_TRY_ASSIGN(UninstallBreakage predicted, uninstall_breakage(analysis, manifests, names));
  UninstallPlan out{std::move(predicted.removal), std::move(predicted.breaks)};
  if (out.breaks.empty() || mode == UninstallMode::force) return out;
  const bool repairable = std::all_of(out.breaks.begin(), out.breaks.end(), [](const Break& b) {
    return b.repairable == Repairable::yes;
  });
  if (mode == UninstallMode::refuse || !repairable) {
    return refusal(analysis, names, messages(out.breaks), repairable);
  }
  PlanOptions options;
  options.uninstall = names;
  VENVFIX_TRY_ASSIGN(out.plan, make_plan(analysis, manifests, index, options));
  std::vector<std::string> left = unrepaired(out.plan, analysis);
  if (!left.empty()) return refusal(analysis, names, left, false);
  return out;
}

}  // namespace venvfix::plan
