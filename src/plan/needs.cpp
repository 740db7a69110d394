// What the doctor's findings ask the plan for (the regular mode), and which distribution
// provides each soname to restore.
#include <algorithm>

#include "internal.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/pep/version.hpp"

namespace venvfix::plan::detail {

namespace {

using verify::Finding;
using verify::FindingKind;
using verify::Severity;

// The CUDA major of a distribution per manifests/ (0: not tied to one, or unknown).
int major_of(const Context& context, const std::string& name) {
  const manifest::Distribution* known = context.manifests.find_distribution(name);
  return known == nullptr ? 0 : known->cuda_major;
}

bool foreign(const Context& context, const std::string& name) {
  int major = major_of(context, name);
  return major != 0 && context.cuda_major != 0 && major != context.cuda_major;
}

// The finding as an unresolved entry, its message completed by what the plan cannot do.
Unresolved entry_for(const Finding& finding, std::string message) {
  Finding entry = finding;
  entry.message = std::move(message);
  return entry;
}

void reinstall(const Context& context, Draft& draft, const Finding& finding, std::string cause) {
  if (foreign(context, finding.dist)) return;  // the target's own major is chosen by soname
  Want& want = draft.want(finding.dist, context.cuda_major);
  want.reinstall = true;
  want.add_cause(std::move(cause));
}

// An unresolved or escaped soname: a soname to restore, or unresolved when the system must
// provide it.
void soname_need(const Context& context, const Finding& finding, Draft& draft) {
  const std::string soname(verify::soname_of(finding));
  if (context.manifests.system_provider(soname)) {
    draft.add_unresolved(
        "soname " + soname,
        entry_for(finding, finding.message + "; it comes from the operating system, not from "
                                             "a wheel: install it with the system's package "
                                             "manager"));
    return;
  }
  const auto* unresolved = finding.as<verify::UnresolvedSoname>();
  const std::vector<std::string>& needed_by = unresolved != nullptr
                                                  ? unresolved->needed_by
                                                  : finding.as<verify::EscapedSoname>()->needed_by;
  draft.sonames[soname].insert(needed_by.begin(), needed_by.end());
}

}  // namespace

void needs_from_findings(const Context& context, Draft& draft) {
  for (const Finding& finding : context.analysis.findings) {
    if (finding.severity != Severity::problem) continue;
    switch (finding.kind()) {
      case FindingKind::ghost_files: {
        const auto& ghost = *finding.as<verify::GhostFiles>();
        std::vector<std::string> parts;
        if (!ghost.missing.empty()) {
          parts.push_back(fmt::format("{} {} missing", first_paths(ghost.missing),
                                      ghost.missing.size() == 1 ? "is" : "are"));
        }
        if (!ghost.mismatched.empty()) {
          parts.push_back(fmt::format("{} differ{} from its RECORD", first_paths(ghost.mismatched),
                                      ghost.mismatched.size() == 1 ? "s" : ""));
        }
        reinstall(context, draft, finding,
                  fmt::format("reinstalls {} {}, whose {}", finding.dist, finding.version,
                              join(parts, " and whose ")));
        break;
      }
      case FindingKind::clobbered_files:
        reinstall(context, draft, finding,
                  fmt::format("reinstalls {} {}, whose {} hold{} the bytes of {}", finding.dist,
                              finding.version, first_paths(finding.paths),
                              finding.paths.size() == 1 ? "s" : "",
                              join(finding.as<verify::ClobberedFiles>()->dists, ", ")));
        break;
      case FindingKind::unresolved_soname:
      case FindingKind::escaped_soname:
        soname_need(context, finding, draft);
        break;
      case FindingKind::unmet_requirement: {
        const auto& unmet = *finding.as<verify::UnmetRequirement>();
        auto requirement = pep::Requirement::parse(unmet.requirement);
        if (!requirement) break;
        std::string name = pep::normalize_name(requirement->name);
        if (foreign(context, name)) {
          draft.add_unresolved(
              "requirement " + unmet.requirement,
              entry_for(finding, finding.message + "; venvfix never installs a distribution "
                                                   "of another CUDA major than the target's"));
          break;
        }
        Want& want = draft.want(name, context.cuda_major);
        want.requirement = std::move(requirement).value();
        want.required_by = unmet.required_by;
        want.add_cause(finding.message);
        break;
      }
      case FindingKind::split_site_packages:
        draft.add_unresolved(
            "split " + finding.dist,
            entry_for(finding, finding.message +
                                   "; no wheel install fixes this: reinstall the target and "
                                   "the libraries it loads into one site-packages directory"));
        break;
      case FindingKind::dist_info:
        // RECORD or METADATA of a needed distribution not usable: reinstall that version, as
        // pip advises ("pip install --force-reinstall --no-deps name==version"). The removal
        // takes what the old RECORD lists (nothing when it is empty or missing); the new
        // wheel's files replace what is on disk.
        reinstall(context, draft, finding,
                  fmt::format("reinstalls {} {}, whose dist-info is broken ({})", finding.dist,
                              finding.version, finding.as<verify::DistInfo>()->anomaly));
        break;
      case FindingKind::shared_paths:  // answered by the removals (planner.cpp checks)
      case FindingKind::cuda_mix:      // remove.cpp
      case FindingKind::orphan_library:
      case FindingKind::pip_stash:  // always a warning: nothing loads from it
        break;
    }
  }
}

namespace {

bool major_fits(const Context& context, const std::string& name) {
  return !foreign(context, name);
}

// An installed distribution (not leaving) whose RECORD lists a file named `soname`.
std::vector<std::string> record_owners(const Context& context, const std::string& soname,
                                       const std::set<std::size_t>& leaving) {
  std::vector<std::string> out;
  const auto& distributions = context.analysis.inventory.distributions;
  for (std::size_t i = 0; i < distributions.size(); ++i) {
    if (leaving.count(i)) continue;
    for (const dist::RecordEntry& entry : distributions[i].record) {
      std::string_view path = entry.path;
      std::size_t slash = path.rfind('/');
      if ((slash == std::string_view::npos ? path : path.substr(slash + 1)) == soname) {
        out.push_back(distributions[i].normalized_name);
        break;
      }
    }
  }
  return out;
}

}  // namespace

void providers_for_sonames(const Context& context, const Pins& pins, Draft& draft) {
  std::set<std::size_t> leaving = draft.leaving();
  std::set<std::string> leaving_names;
  for (std::size_t index : leaving) leaving_names.insert(context.dist(index).normalized_name);
  const manifest::Manifests& manifests = context.manifests;
  int major = context.cuda_major;

  for (const auto& [soname_key, consumers] : draft.sonames) {
    const std::string& soname = soname_key;  // a lambda may not capture a binding (clang)
    auto ships = [&](const std::string& name) {
      const manifest::Distribution* known = manifests.find_distribution(name);
      return known != nullptr && known->provides(soname);
    };
    std::string chosen;
    // A want of the plan already ships it (a ghost being reinstalled, a pinned requirement).
    for (const auto& [name, want] : draft.wants) {
      if (ships(name) && major_fits(context, name)) {
        chosen = name;
        break;
      }
    }
    // 1. the targets' pins
    if (chosen.empty()) {
      for (const auto& [name, list] : pins) {
        if (!leaving_names.count(name) && ships(name) && major_fits(context, name)) {
          chosen = name;
          break;
        }
      }
    }
    // 2. a ghost or clobbered owner: an installed distribution whose RECORD lists it
    if (chosen.empty()) {
      for (const std::string& name : record_owners(context, soname, leaving)) {
        // A placeholder's name (nvidia-cublas-cu13) is never installed: manifests/ decide.
        if (major_fits(context, name) && manifests.placeholder_of(name) == nullptr) {
          chosen = name;
          break;
        }
      }
    }
    // 3. manifests/ for the target's CUDA major: installed first, then by name
    if (chosen.empty()) {
      std::vector<std::string> names;
      for (const manifest::Distribution* provider : manifests.providers_of(soname, major)) {
        if (!leaving_names.count(provider->name)) names.push_back(provider->name);
      }
      std::sort(names.begin(), names.end());
      std::stable_partition(names.begin(), names.end(), [&](const std::string& name) {
        return context.installed(name) != nullptr;
      });
      if (!names.empty()) chosen = names.front();
    }
    if (chosen.empty()) {
      Finding entry;
      entry.severity = Severity::problem;
      entry.detail =
          verify::UnresolvedSoname{soname, {}, {consumers.begin(), consumers.end()}, {}, {}};
      std::string where = major != 0 ? fmt::format(" for CUDA {}", major) : std::string();
      entry.message = fmt::format(
          "{} (needed by {}) is shipped by no distribution venvfix knows{}{}; install what "
          "provides it yourself",
          soname, first_and_more(consumers), where,
          leaving.empty() ? "" : " other than the ones this plan removes");
      draft.add_unresolved("soname " + soname, std::move(entry));
      continue;
    }
    Want& want = draft.want(chosen, major);
    want.sonames.insert(soname);
    want.consumers.insert(consumers.begin(), consumers.end());
    if (auto it = draft.soname_repair.find(soname); it != draft.soname_repair.end() && it->second) {
      want.repair = true;
    }
  }
  meta_components(context, pins, draft);
}

void meta_components(const Context& context, const Pins& pins, Draft& draft) {
  for (const auto& [name, list] : pins) {
    for (const Pin& pin : list) {
      auto via = pep::Requirement::parse(pin.via);
      if (pin.via.empty() || !via || !draft.wants.count(pep::normalize_name(via->name))) continue;
      if (foreign(context, name) || context.manifests.placeholder_of(name)) continue;
      if (const dist::Distribution* installed = context.installed(name)) {
        auto version = pep::Version::parse(installed->version);
        if (version && pin.specifier.contains(*version, pep::PreReleases::allow)) continue;
      }
      draft.want(name, context.cuda_major)
          .add_cause(fmt::format("installed with {}, as pip installs {}'s requirement", pin.via,
                                 pin.required_by));
    }
  }
}

}  // namespace venvfix::plan::detail
