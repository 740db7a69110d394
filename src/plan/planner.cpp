// make_plan: the passes of internal.hpp, repeated while the simulation finds something new to
// do (a soname a removal takes away gets a provider; a removal that would break a target no
// provider can save is left out).
#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "internal.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/dist/scan.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/pep/tags.hpp"

namespace venvfix::plan {

pep::TargetPython target_python(const verify::Analysis& analysis) {
  pep::TargetPython target;
  target.major = analysis.venv.python.major;
  target.minor = analysis.venv.python.minor;
  target.implementation =
      analysis.venv.implementation == "cpython" || analysis.venv.implementation.empty()
          ? "cp"
          : analysis.venv.implementation;
  target.arch = analysis.host.arch;
  target.glibc = analysis.host.glibc;
  target.musl = analysis.host.musl;
  target.full_version = analysis.venv.python.full;
  return target;
}

namespace detail {

std::string first_and_more(const std::set<std::string>& items) {
  if (items.empty()) return "nothing";
  if (items.size() == 1) return *items.begin();
  return fmt::format("{} and {} more", *items.begin(), items.size() - 1);
}

std::string first_paths(const std::vector<std::string>& paths) {
  if (paths.empty()) return "nothing";
  auto first = std::find_if(paths.begin(), paths.end(), [](const std::string& path) {
    return dist::looks_like_shared_object(fs::path(path).filename().string());
  });
  if (first == paths.end()) first = paths.begin();
  if (paths.size() == 1) return *first;
  return fmt::format("{} and {} more", *first, paths.size() - 1);
}

void Want::add_cause(std::string cause) {
  if (std::find(causes.begin(), causes.end(), cause) == causes.end()) {
    causes.push_back(std::move(cause));
  }
}

Want& Draft::want(const std::string& name, int cuda_major) {
  auto [it, fresh] = wants.try_emplace(name);
  if (fresh) {
    it->second.name = name;
    it->second.cuda_major = cuda_major;
  }
  return it->second;
}

void Draft::add_unresolved(const std::string& key, Unresolved entry) {
  if (unresolved_keys.insert(key).second) unresolved.push_back(std::move(entry));
}

std::set<std::size_t> Draft::leaving() const {
  std::set<std::size_t> out;
  for (const Removal& removal : removals) out.insert(removal.dist);
  return out;
}

const dist::Distribution* Context::installed(const std::string& name) const {
  return analysis.inventory.find(name);
}

std::vector<std::pair<pep::Requirement, std::string>> Context::requirements_on(
    const std::string& name, const std::set<std::size_t>& leaving) const {
  std::vector<std::pair<pep::Requirement, std::string>> out;
  const auto& distributions = analysis.inventory.distributions;
  for (std::size_t i = 0; i < distributions.size(); ++i) {
    if (leaving.count(i)) continue;
    for (const std::string& text : distributions[i].metadata.requires_dist) {
      // Cheap test first: most lines name another distribution.
      if (pep::normalize_name(
              std::string_view(text).substr(0, text.find_first_of(" ;[<>=!~(@,\t"))) != name) {
        continue;
      }
      auto requirement = pep::Requirement::parse(text);
      if (!requirement || pep::normalize_name(requirement->name) != name) continue;
      if (requirement->marker && !requirement->marker->evaluate(analysis.markers, {})) continue;
      out.emplace_back(std::move(requirement).value(), distributions[i].normalized_name);
    }
  }
  return out;
}

Remove remove_action(const Context& context, const Removal& removal, const Keep& keep) {
  const dist::Distribution& dist = context.dist(removal.dist);
  Remove action;
  action.dist = dist.normalized_name;
  action.version = dist.version;
  action.keep = keep.keep;
  action.reason = removal.reason;
  if (!keep.keep.empty()) {
    action.reason += fmt::format(", keeping the {} path{} another distribution also owns",
                                 keep.keep.size(), keep.keep.size() == 1 ? "" : "s");
  }
  action.rule = removal.rule;
  return action;
}

Plan start_plan(const verify::Analysis& analysis) {
  Plan plan;
  plan.venv = analysis.venv.root.string();
  plan.python = fmt::format("{}.{}", analysis.venv.python.major, analysis.venv.python.minor);
  std::vector<std::string> platforms = pep::linux_platform_tags(target_python(analysis));
  plan.platform = platforms.empty() ? std::string() : platforms.front();
  plan.targets = analysis.target_list();
  plan.state = state_digest(analysis);
  plan.state_dists = state_by_distribution(analysis);
  // Exactly what `doctor --json` reports for this venv, warnings included, in its order.
  plan.findings = analysis.findings;
  for (const verify::Finding& note : analysis.notes) {
    const auto* driver = note.as<verify::UnresolvedSoname>();
    plan.notes.push_back(
        {note.message + "; never planned", DriverLibrary{driver->soname, driver->needed_by}});
  }
  return plan;
}

Result<std::set<std::size_t>> uninstall_indices(const verify::Analysis& analysis,
                                                const std::vector<std::string>& names) {
  std::set<std::size_t> out;
  for (const std::string& name : names) {
    const dist::Distribution* dist = analysis.inventory.find(name);
    if (dist == nullptr) {
      return make_error(ExitCode::usage, "cannot plan uninstalling '{}': it is not installed in {}",
                        name, analysis.venv.root.string());
    }
    out.insert(static_cast<std::size_t>(dist - analysis.inventory.distributions.data()));
  }
  return out;
}

int target_cuda_major(const verify::Analysis& analysis) {
  for (const verify::Target& target : analysis.targets) {
    if (target.cuda_major != 0) return target.cuda_major;
  }
  return 0;
}

// Requirements on a distribution that --uninstall removes: unresolved when the targets need the
// requirer (a problem for a target), a note otherwise.
void uninstall_requirements(const Context& context, Draft& draft) {
  std::set<std::size_t> leaving = draft.leaving();
  for (std::size_t index : context.uninstall) {
    const dist::Distribution& dist = context.dist(index);
    for (const auto& [requirement, by] : context.requirements_on(dist.normalized_name, leaving)) {
      const dist::Distribution* requirer = context.installed(by);
      bool needed =
          requirer != nullptr && context.analysis.needed[static_cast<std::size_t>(
                                     requirer - context.analysis.inventory.distributions.data())];
      std::string text = requirement.to_string();
      std::string message = fmt::format("uninstalling {} {} leaves {}'s requirement {} unmet",
                                        dist.normalized_name, dist.version, by, text);
      if (needed) {
        verify::Finding entry;
        entry.severity = verify::Severity::problem;
        entry.message = std::move(message);
        entry.dist = dist.normalized_name;
        entry.detail = verify::UnmetRequirement{text, by};
        draft.add_unresolved(fmt::format("requirement {} {}", text, by), std::move(entry));
      } else {
        draft.notes.push_back({std::move(message), UnmetByUninstall{dist.normalized_name, by}});
      }
    }
  }
}

Unresolved failure_entry(const Context& context, const Failure& failure, const Draft& draft) {
  verify::Finding entry;
  entry.severity = verify::Severity::problem;
  std::vector<std::string> needed_by(failure.needed_by.begin(), failure.needed_by.end());
  if (failure.escaped) {
    entry.detail = verify::EscapedSoname{failure.soname, std::move(needed_by), failure.resolved_to};
  } else {
    entry.detail = verify::UnresolvedSoname{failure.soname, {}, std::move(needed_by), {}, {}};
  }
  std::string consumers = first_and_more(failure.needed_by);
  if (failure.escaped) {
    entry.message = fmt::format(
        "{} would still be loaded from {} for {}: the loader looks there before the venv's "
        "copy (check LD_LIBRARY_PATH)",
        failure.soname, failure.resolved_to, consumers);
  } else if (failure.regression && failure.cause) {
    entry.message = fmt::format(
        "{} (needed by {}) would no longer resolve once {} is removed, and nothing venvfix "
        "knows provides it elsewhere",
        failure.soname, consumers,
        context.dist(draft.removals[*failure.cause].dist).normalized_name);
  } else {
    entry.message = fmt::format("{} (needed by {}) would still not resolve after this plan",
                                failure.soname, consumers);
  }
  return entry;
}

}  // namespace detail

namespace {

using namespace detail;

// What a finished round produced.
struct Round {
  Draft draft;
  std::vector<Keep> keeps;
  std::vector<Addition> installs;
  std::vector<Failure> failures;
};

Result<Round> plan_round(const Context& context, IndexView& index, std::optional<Pins>& pins,
                         const std::set<std::size_t>& dropped,
                         const std::map<std::string, std::set<std::string>>& repair_sonames) {
  Round round;
  Draft& draft = round.draft;
  VENVFIX_TRY(plan_removals(context, dropped, draft));
  if (context.uninstall.empty()) {
    needs_from_findings(context, draft);
  } else {
    uninstall_requirements(context, draft);
  }
  for (const auto& [soname, consumers] : repair_sonames) {
    draft.sonames[soname].insert(consumers.begin(), consumers.end());
    draft.soname_repair[soname] = true;
  }
  std::set<std::size_t> leaving = draft.leaving();
  for (const Removal& removal : draft.removals) {
    Keep keep = keep_for(context, removal.dist, leaving);
    for (const auto& [owner, paths] : keep.damaged_owners) {
      const dist::Distribution& dist = context.dist(owner);
      bool fresh = !draft.wants.count(dist.normalized_name);
      Want& want = draft.want(dist.normalized_name, context.cuda_major);
      bool said = want.reinstall;  // a finding already says why it is reinstalled
      want.reinstall = true;
      if (fresh) want.repair = true;
      if (said) continue;
      want.add_cause(fmt::format(
          "reinstalls {} {}, whose {} {} not hold its own bytes once {} is removed",
          dist.normalized_name, dist.version, first_paths(paths), paths.size() == 1 ? "does" : "do",
          context.dist(removal.dist).normalized_name));
    }
    round.keeps.push_back(std::move(keep));
  }
  if (!draft.wants.empty() || !draft.sonames.empty()) {
    if (!pins) {
      VENVFIX_TRY_ASSIGN(Pins collected, collect_pins(context.analysis, context.manifests, index));
      pins = std::move(collected);
    }
    providers_for_sonames(context, *pins, draft);
    for (const auto& [name, want] : draft.wants) {
      VENVFIX_TRY_ASSIGN(std::optional<Addition> install,
                         choose(context, want, *pins, index, draft));
      if (install) round.installs.push_back(std::move(install).value());
    }
  }
  round.failures = simulate(context, round.installs, round.keeps);
  return round;
}

void finish(const Context& context, Round& round, Plan& plan) {
  Draft& draft = round.draft;
  const verify::Analysis& analysis = context.analysis;
  for (const Failure& failure : round.failures) {
    draft.add_unresolved("soname " + failure.soname, failure_entry(context, failure, draft));
  }
  std::set<std::size_t> leaving = draft.leaving();
  std::set<std::string> leaving_names;
  for (std::size_t index : leaving) leaving_names.insert(context.dist(index).normalized_name);
  if (context.uninstall.empty()) {
    // Two remaining owners of the same paths with different bytes: nothing an install fixes.
    for (const verify::Finding& finding : analysis.findings) {
      const auto* shared = finding.as<verify::SharedPaths>();
      if (shared == nullptr || finding.severity != verify::Severity::problem) continue;
      bool resolved = std::any_of(shared->dists.begin(), shared->dists.end(),
                                  [&](const std::string& d) { return leaving_names.count(d); });
      if (resolved) continue;
      verify::Finding entry = finding;
      entry.message = finding.message +
                      "; venvfix leaves both installed (uninstall one of them with "
                      "`venvfix uninstall`)";
      draft.add_unresolved("shared " + join(shared->dists, ","), std::move(entry));
    }
  }

  std::vector<std::pair<std::string, Remove>> removes;
  for (std::size_t i = 0; i < draft.removals.size(); ++i) {
    Remove action = remove_action(context, draft.removals[i], round.keeps[i]);
    removes.emplace_back(action.dist, std::move(action));
  }
  std::sort(removes.begin(), removes.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [name, action] : removes) plan.actions.push_back(std::move(action));
  std::sort(round.installs.begin(), round.installs.end(),
            [](const Addition& a, const Addition& b) { return a.action.dist < b.action.dist; });
  for (Addition& install : round.installs) plan.actions.push_back(std::move(install.action));

  plan.unresolved = std::move(draft.unresolved);
  for (Note& note : draft.notes) plan.notes.push_back(std::move(note));
}

}  // namespace

Result<Plan> make_plan(const verify::Analysis& analysis, const manifest::Manifests& manifests,
                       index::IndexClient& index, const PlanOptions& options) {
  auto started = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
        .count();
  };
  Plan plan = start_plan(analysis);
  spdlog::debug("plan: state digest took {:.1f} ms", elapsed_ms());
  VENVFIX_TRY_ASSIGN(std::set<std::size_t> uninstall,
                     uninstall_indices(analysis, options.uninstall));
  Context context{analysis, manifests, options, std::move(uninstall), target_cuda_major(analysis)};
  if (analysis.targets.empty() && context.uninstall.empty()) return plan;  // nothing to check

  IndexView view(index, target_python(analysis));
  std::optional<Pins> pins;
  std::set<std::size_t> dropped;
  // soname -> consumers, restored because a removal takes them away; keyed by the removal's
  // distribution so dropping the removal drops them too.
  std::map<std::size_t, std::map<std::string, std::set<std::string>>> repairs;
  // Each round either finishes, drops a removal, or adds a soname to restore: bounded.
  const std::size_t max_rounds = 2 * analysis.inventory.distributions.size() + 4;
  for (std::size_t attempt = 0;; ++attempt) {
    std::map<std::string, std::set<std::string>> repair_sonames;
    for (const auto& [dist, sonames] : repairs) {
      for (const auto& [soname, consumers] : sonames) {
        repair_sonames[soname].insert(consumers.begin(), consumers.end());
      }
    }
    VENVFIX_TRY_ASSIGN(Round round, plan_round(context, view, pins, dropped, repair_sonames));
    bool again = false;
    if (attempt + 1 < max_rounds) {
      // First try to restore what a removal takes away; a removal whose damage stays even
      // then is left out, if it may be.
      for (const Failure& failure : round.failures) {
        if (!failure.regression || !failure.cause || failure.escaped) continue;
        std::size_t dist = round.draft.removals[*failure.cause].dist;
        if (repair_sonames.count(failure.soname)) continue;
        repairs[dist][failure.soname].insert(failure.needed_by.begin(), failure.needed_by.end());
        again = true;
      }
      if (!again) {
        for (const Failure& failure : round.failures) {
          if (!failure.regression || !failure.cause) continue;
          const Removal& removal = round.draft.removals[*failure.cause];
          if (!removal.optional || dropped.count(removal.dist)) continue;
          spdlog::debug("plan: leaving {} installed: {} would not resolve without it",
                        context.dist(removal.dist).normalized_name, failure.soname);
          dropped.insert(removal.dist);
          repairs.erase(removal.dist);
          again = true;
        }
      }
    }
    if (again) continue;
    finish(context, round, plan);
    keep_to_own_layer(context, plan);
    spdlog::debug("plan: {} round{}, {:.1f} ms in all", attempt + 1, attempt == 0 ? "" : "s",
                  elapsed_ms());
    return plan;
  }
}

}  // namespace venvfix::plan
