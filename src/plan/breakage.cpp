// The breakage rule (plan/breakage.hpp): over an analysis's findings for `run`, and predicted
// for a removal for `uninstall` with the planner's own pieces (removals, kept paths, the
// loader simulation) and no index.
#include "venvfix/plan/breakage.hpp"

#include <algorithm>
#include <set>

#include "internal.hpp"
#include "venvfix/pep/name.hpp"

namespace venvfix::plan {

namespace {

using verify::Finding;
using verify::FindingKind;

std::string soname_key(bool escaped, const std::string& soname) {
  return fmt::format("{} {}", escaped ? "escaped-soname" : "unresolved-soname", soname);
}
std::string ghost_key(const std::string& dist) {
  return "ghost-files " + dist;
}
std::string requirement_key(const std::string& required_by, const std::string& requirement) {
  return fmt::format("unmet-requirement {} {}", required_by, requirement);
}

// The sonames the removal takes away from a target.
void soname_breaks(const detail::Context& context, const detail::Draft& draft,
                   const std::vector<detail::Failure>& failures, std::vector<Break>& out) {
  for (const detail::Failure& failure : failures) {
    if (!failure.regression) continue;  // not the removal's doing
    std::string removed = failure.cause
                              ? context.dist(draft.removals[*failure.cause].dist).normalized_name
                              : std::string("the removal");
    std::string consumers = detail::first_and_more(failure.needed_by);
    std::string message =
        failure.escaped
            ? fmt::format("{} (needed by {}) would be loaded from {} once {} is removed",
                          failure.soname, consumers, failure.resolved_to, removed)
            : fmt::format("{} (needed by {}) would no longer resolve once {} is removed",
                          failure.soname, consumers, removed);
    out.push_back({soname_key(failure.escaped, failure.soname), std::move(message)});
  }
}

// Remaining owners the targets need whose kept files hold the removed distribution's bytes.
void owner_breaks(const detail::Context& context, const detail::Draft& draft,
                  const std::vector<detail::Keep>& keeps, std::vector<Break>& out) {
  for (std::size_t i = 0; i < keeps.size(); ++i) {
    for (const auto& [owner, paths] : keeps[i].damaged_owners) {
      if (!context.analysis.needed[owner]) continue;  // a warning, as doctor rates it
      const dist::Distribution& dist = context.dist(owner);
      out.push_back({ghost_key(dist.normalized_name),
                     fmt::format("{} {}'s {} would not hold its own bytes once {} is removed",
                                 dist.normalized_name, dist.version, detail::first_paths(paths),
                                 context.dist(draft.removals[i].dist).normalized_name)});
    }
  }
}

// Requirements of needed distributions on a removed native distribution.
void requirement_breaks(const detail::Context& context, const detail::Draft& draft,
                        std::vector<Break>& out) {
  const std::set<std::size_t> leaving = draft.leaving();
  for (std::size_t index : leaving) {
    const dist::Distribution& removed = context.dist(index);
    if (context.manifests.find_distribution(removed.normalized_name) == nullptr) continue;
    for (const auto& [requirement, by] :
         context.requirements_on(removed.normalized_name, leaving)) {
      const dist::Distribution* requirer = context.installed(by);
      if (requirer == nullptr || !context.analysis.needed[static_cast<std::size_t>(
                                     requirer - context.analysis.inventory.distributions.data())]) {
        continue;
      }
      std::string text = requirement.to_string();
      out.push_back({requirement_key(by, text),
                     fmt::format("uninstalling {} {} leaves {}'s requirement {} unmet",
                                 removed.normalized_name, removed.version, by, text),
                     Repairable::no});
    }
  }
}

}  // namespace

std::vector<Break> breakage(const verify::Analysis& analysis) {
  std::vector<Break> out;
  for (const Finding& f : analysis.findings) {
    if (f.severity != verify::Severity::problem) continue;
    switch (f.kind()) {
      case FindingKind::unresolved_soname:
      case FindingKind::escaped_soname:
        out.push_back(
            {soname_key(f.kind() == FindingKind::escaped_soname, std::string(verify::soname_of(f))),
             f.message});
        break;
      case FindingKind::ghost_files:
        out.push_back({ghost_key(pep::normalize_name(f.dist)), f.message});
        break;
      case FindingKind::unmet_requirement: {
        const auto& unmet = *f.as<verify::UnmetRequirement>();
        out.push_back(
            {requirement_key(unmet.required_by, unmet.requirement), f.message, Repairable::no});
        break;
      }
      default:
        break;
    }
  }
  return new_breaks({}, out);  // one per key
}

std::vector<Break> new_breaks(const std::vector<Break>& before, const std::vector<Break>& after) {
  std::set<std::string> seen;
  for (const Break& b : before) seen.insert(b.key);
  std::vector<Break> out;
  for (const Break& b : after) {
    if (seen.insert(b.key).second) out.push_back(b);
  }
  return out;
}

Result<UninstallBreakage> uninstall_breakage(const verify::Analysis& analysis,
                                             const manifest::Manifests& manifests,
                                             const std::vector<std::string>& names) {
  PlanOptions options;
  options.uninstall = names;
  VENVFIX_TRY_ASSIGN(std::set<std::size_t> uninstall, detail::uninstall_indices(analysis, names));
  detail::Context context{analysis, manifests, options, std::move(uninstall),
                          detail::target_cuda_major(analysis)};
  detail::Draft draft;
  VENVFIX_TRY(detail::plan_removals(context, {}, draft));
  const std::set<std::size_t> leaving = draft.leaving();
  std::vector<detail::Keep> keeps;
  for (const detail::Removal& removal : draft.removals) {
    keeps.push_back(detail::keep_for(context, removal.dist, leaving));
  }
  // The removal's plan, as make_plan writes it: what stays failing goes to `unresolved` (so that
  // apply's verification does not blame the removal for the venv's own problems).
  detail::uninstall_requirements(context, draft);
  const std::vector<detail::Failure> failures = detail::simulate(context, {}, keeps);
  for (const detail::Failure& failure : failures) {
    draft.add_unresolved("soname " + failure.soname,
                         detail::failure_entry(context, failure, draft));
  }
  UninstallBreakage out;
  out.removal = detail::start_plan(analysis);
  for (std::size_t i = 0; i < draft.removals.size(); ++i) {
    out.removal.actions.push_back(detail::remove_action(context, draft.removals[i], keeps[i]));
  }
  std::sort(out.removal.actions.begin(), out.removal.actions.end(),
            [](const Action& a, const Action& b) { return dist_of(a) < dist_of(b); });
  out.removal.unresolved = draft.unresolved;
  out.removal.notes.insert(out.removal.notes.end(), draft.notes.begin(), draft.notes.end());
  std::vector<Break> after;
  soname_breaks(context, draft, failures, after);
  owner_breaks(context, draft, keeps, after);
  requirement_breaks(context, draft, after);
  out.breaks = new_breaks(breakage(analysis), after);
  return out;
}

}  // namespace venvfix::plan
