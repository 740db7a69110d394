// The version rules, in order (docs/plan.md):
//   1. pin       the targets' Requires-Dist (meta-package extras followed; pins.cpp);
//   2. installed the installed version of a ghost or clobbered distribution;
//   3. manifest  manifests/ for the target's CUDA major: the releases that ship the sonames;
//   4. newest    the newest version every installed distribution's Requires-Dist allows.
// Whatever the rule, every installed requirement on the distribution must hold too; when the
// rule's version breaks one, that is a conflict the user must settle (an unresolved entry
// naming both requirements), never a silent choice. The wheel is the best-tagged file for
// this interpreter and platform (index::select_wheel).
#include <algorithm>

#include "internal.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/dist/scan.hpp"
#include "venvfix/index/url.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/pep/version.hpp"

namespace venvfix::plan::detail {

namespace {

struct Rule {
  std::string name;    // "pin", "installed", "manifest", "newest"
  std::string phrase;  // for the reason: "torch pins nvidia-cudnn-cu12==9.10.2.21"
  std::vector<pep::SpecifierSet> alternatives;  // try each, keep the newest that fits
  std::vector<std::string> texts;               // the rule's requirement(s), for conflicts
};

pep::SpecifierSet combine(const std::vector<const pep::SpecifierSet*>& sets) {
  std::vector<std::string> clauses;
  for (const pep::SpecifierSet* set : sets) {
    for (const pep::Specifier& clause : set->specifiers()) clauses.push_back(clause.to_string());
  }
  auto combined = pep::SpecifierSet::parse(join(clauses, ","));
  return combined ? std::move(combined).value() : pep::SpecifierSet();
}

std::string pin_phrase(const Pin& pin) {
  if (pin.via.empty()) return fmt::format("{} pins {}", pin.required_by, pin.requirement);
  return fmt::format("{} pins {}, which pins {}", pin.required_by, pin.via, pin.requirement);
}

Rule rule_for(const Context& context, const Want& want, const Pins& pins) {
  Rule rule;
  if (auto it = pins.find(want.name); it != pins.end()) {
    std::vector<const pep::SpecifierSet*> sets;
    std::vector<std::string> phrases;
    for (const Pin& pin : it->second) {
      if (pin.specifier.empty()) continue;
      sets.push_back(&pin.specifier);
      phrases.push_back(pin_phrase(pin));
      rule.texts.push_back(fmt::format("{} (required by {}{})", pin.requirement, pin.required_by,
                                       pin.via.empty() ? "" : " through " + pin.via));
    }
    if (!sets.empty()) {
      rule.name = "pin";
      rule.phrase = join(phrases, "; ");
      rule.alternatives.push_back(combine(sets));
      return rule;
    }
  }
  const dist::Distribution* installed = context.installed(want.name);
  if (want.reinstall && installed != nullptr) {
    auto exact = pep::SpecifierSet::parse("==" + installed->version);
    if (exact) {
      rule.name = "installed";
      rule.phrase = fmt::format("the installed version {}", installed->version);
      rule.alternatives.push_back(std::move(exact).value());
      rule.texts.push_back(fmt::format("{}=={} (installed)", want.name, installed->version));
      return rule;
    }
  }
  const manifest::Distribution* known = context.manifests.find_distribution(want.name);
  if (known != nullptr && !want.sonames.empty()) {
    for (const manifest::Release& release : known->releases) {
      bool ships_all = std::all_of(want.sonames.begin(), want.sonames.end(),
                                   [&](const std::string& s) { return release.find_library(s); });
      if (ships_all) rule.alternatives.push_back(release.specifier);
    }
    if (!rule.alternatives.empty()) {
      rule.name = "manifest";
      rule.phrase = fmt::format(
          "manifests/: {} ships {} for CUDA {}; the newest version the installed requirements "
          "allow",
          want.name, join(std::vector<std::string>(want.sonames.begin(), want.sonames.end()), ", "),
          known->cuda_major);
      return rule;
    }
  }
  rule.name = "newest";
  rule.phrase = "the newest version the installed requirements allow";
  rule.alternatives.emplace_back();
  return rule;
}

// "torch/lib/libtorch_cuda.so and 3 more": a target's own object first when there is one.
std::string consumers_text(const Context& context, const std::set<std::string>& consumers) {
  if (consumers.empty()) return "nothing";
  std::string first = *consumers.begin();
  for (const std::string& target : context.analysis.target_list()) {
    auto it = std::find_if(consumers.begin(), consumers.end(),
                           [&](const std::string& c) { return c.starts_with(target + "/"); });
    if (it != consumers.end()) {
      first = *it;
      break;
    }
  }
  if (consumers.size() == 1) return first;
  return fmt::format("{} and {} more", first, consumers.size() - 1);
}

std::string reason_for(const Context& context, const Want& want, const Rule& rule) {
  std::vector<std::string> parts;
  if (!want.sonames.empty()) {
    parts.push_back(
        fmt::format("restores {} needed by {}",
                    join(std::vector<std::string>(want.sonames.begin(), want.sonames.end()), ", "),
                    consumers_text(context, want.consumers)));
  }
  for (const std::string& cause : want.causes) parts.push_back(cause);
  if (parts.empty()) parts.push_back("installs " + want.name);
  return fmt::format("{} ({})", join(parts, "; "), rule.phrase);
}

// The files the install adds: the manifest's libraries of the chosen release, else (a
// distribution manifests/ does not know, reinstalled at its version) the shared objects of
// its installed RECORD.
std::vector<AddedFile> files_of(const Context& context, const std::string& name,
                                const pep::Version& version) {
  std::vector<AddedFile> files;
  if (const manifest::Distribution* known = context.manifests.find_distribution(name)) {
    if (const manifest::Release* release = known->release_for(version)) {
      for (const manifest::Library& library : release->libraries) {
        fs::path path = (context.analysis.venv.purelib / known->lib_dir / library.file);
        files.push_back({path.lexically_normal(), library.soname, &library});
      }
    }
    return files;
  }
  if (const dist::Distribution* installed = context.installed(name)) {
    for (const dist::RecordEntry& entry : installed->record) {
      fs::path path(dist::resolve_record_path(installed->site_packages, entry.path));
      files.push_back({path, path.filename().string(), nullptr});
    }
  }
  return files;
}

// When `name` (a CUDA 13 toolkit component) is missing from the index or has no wheel for
// this platform: what the index offers under its placeholder names instead ("; the index has
// only nvidia-cublas-cu13 (nvidia_cublas_cu13-0.0.1.tar.gz), ..."), or "" when nothing.
std::string placeholder_hint(const Context& context, const std::string& name, IndexView& index) {
  const manifest::Distribution* known = context.manifests.find_distribution(name);
  if (known == nullptr) return "";
  std::vector<std::string> offered;
  for (const std::string& placeholder : known->placeholders) {
    auto page = index.page(placeholder);
    if (!page) continue;
    std::vector<std::string> files;
    for (const index::IndexFile& file : (*page)->files) files.push_back(file.filename);
    offered.push_back(fmt::format("{} ({})", placeholder, join(files, ", ")));
  }
  if (offered.empty()) return "";
  return fmt::format(
      "; the index has only {}, a source-only placeholder whose build fails, which venvfix "
      "never installs (CUDA 13 toolkit wheels carry no -cu13 suffix: {} is the real one)",
      join(offered, ", "), name);
}

Error with_hint(Error error, const std::string& hint) {
  if (!hint.empty()) error.message += hint;
  return error;
}

// A want that names a placeholder (a ghost or clobbered nvidia-cublas-cu13): never planned.
void refuse_placeholder(const Want& want, const manifest::Distribution& real, Draft& draft) {
  Placeholder entry{want.name, real.name,
                    fmt::format("{} is a source-only placeholder whose build fails, not a wheel "
                                "venvfix installs; the CUDA 13 component is {}: install that "
                                "instead",
                                want.name, real.name)};
  draft.add_unresolved("placeholder " + want.name, std::move(entry));
}

// The requirements other installed distributions put on `want`, less the target's own lines
// when the rule is the target's pin (a requirement the target pins is the pin itself).
struct OtherRequirements {
  std::vector<std::pair<pep::Requirement, std::string>> lines;  // (requirement, required by)
  std::vector<const pep::SpecifierSet*> sets;
};

OtherRequirements other_requirements(const Context& context, const Want& want, const Rule& rule,
                                     const std::set<std::size_t>& leaving) {
  std::set<std::string> targets;
  for (const std::string& name : context.analysis.target_list()) targets.insert(name);
  OtherRequirements others;
  for (auto& [requirement, by] : context.requirements_on(want.name, leaving)) {
    if (rule.name == "pin" && targets.count(by)) continue;
    others.lines.emplace_back(requirement, by);
  }
  for (const auto& [requirement, by] : others.lines) {
    if (!requirement.specifier.empty()) others.sets.push_back(&requirement.specifier);
  }
  return others;
}

// The newest candidate that meets one of the rule's alternatives and every other requirement.
std::optional<index::Candidate> best_candidate(const Want& want, const Rule& rule,
                                               const OtherRequirements& others, IndexView& index) {
  std::optional<index::Candidate> best;
  for (const pep::SpecifierSet& alternative : rule.alternatives) {
    std::vector<const pep::SpecifierSet*> sets = others.sets;
    sets.push_back(&alternative);
    auto candidate = index.select(want.name, combine(sets));
    if (!candidate) continue;
    if (!best || best->wheel.version < candidate->wheel.version) {
      best = std::move(candidate).value();
    }
  }
  return best;
}

// No candidate: an error when the rule alone finds none (the index lacks it), else an
// unresolved conflict between the rule and the installed requirements.
Status explain_no_candidate(const Context& context, const Want& want, const Rule& rule,
                            const OtherRequirements& others, IndexView& index, Draft& draft) {
  std::optional<index::Candidate> alone;
  Error last{ExitCode::network, ""};
  for (const pep::SpecifierSet& alternative : rule.alternatives) {
    auto candidate = index.select(want.name, alternative);
    if (candidate) {
      if (!alone || alone->wheel.version < candidate->wheel.version) alone = *candidate;
    } else {
      last = candidate.error();
    }
  }
  if (!alone) {
    std::string what = rule.name == "pin" || rule.name == "installed"
                           ? fmt::format("{} ({})", want.name, rule.phrase)
                           : want.name;
    return with_hint(
        make_error(ExitCode::network,
                   "cannot plan {}: {}. Check that the index serves this version for this "
                   "platform (an index that dropped old versions needs --extra-index-url or "
                   "--find-links with the wheel), or install a target whose requirements the "
                   "index can meet",
                   what, last.message),
        placeholder_hint(context, want.name, index));
  }
  std::vector<std::string> conflicting;
  std::vector<std::string> requirements = rule.texts;
  for (const auto& [requirement, by] : others.lines) {
    if (requirement.specifier.contains(alone->wheel.version, pep::PreReleases::allow)) continue;
    std::string text = requirement.name + requirement.specifier.to_string();
    conflicting.push_back(fmt::format("{} requires {}", by, text));
    requirements.push_back(fmt::format("{} (required by {})", text, by));
  }
  std::string rule_side = rule.phrase.empty() ? want.name : rule.phrase;
  ConflictingRequirements entry{
      want.name, requirements,
      fmt::format(
          "{}, but {}: no version of {} satisfies both, and venvfix makes no silent "
          "choice; change or remove one of these distributions",
          rule_side,
          conflicting.empty() ? "the installed requirements disagree" : join(conflicting, " and "),
          want.name)};
  draft.add_unresolved("conflict " + want.name, std::move(entry));
  return ok();
}

Result<Addition> make_install(const Context& context, const Want& want, const Rule& rule,
                              const index::Candidate& best, IndexView& index) {
  VENVFIX_TRY_ASSIGN(IndexView::Digest digest, index.digest(best));
  Addition install;
  Install& action = install.action;
  action.dist = want.name;
  action.version = best.wheel.version.to_string();
  if (const dist::Distribution* installed = context.installed(want.name)) {
    action.replaces = DistVersion{installed->normalized_name, installed->version};
  }
  action.file = best.file.filename;
  action.url = index::without_user_info(best.file.url);
  action.sha256 = digest.sha256;
  action.size = digest.size;
  install.files = files_of(context, want.name, best.wheel.version);
  std::set<std::string> provides;
  for (const AddedFile& file : install.files) {
    if (file.library != nullptr || dist::looks_like_shared_object(file.soname)) {
      provides.insert(file.soname);
    }
  }
  action.provides.assign(provides.begin(), provides.end());
  action.reason = reason_for(context, want, rule);
  action.rule = want.repair ? "repair:" + rule.name : rule.name;
  return install;
}

}  // namespace

Result<std::optional<Addition>> choose(const Context& context, const Want& want, const Pins& pins,
                                       IndexView& index, Draft& draft) {
  if (const manifest::Distribution* real = context.manifests.placeholder_of(want.name)) {
    refuse_placeholder(want, *real, draft);
    return std::optional<Addition>();
  }
  // An index that fails is an error as it is; only a version or wheel missing from a page that
  // came back gets the advice in explain_no_candidate.
  if (auto page = index.page(want.name); !page) {
    return with_hint(page.error(), placeholder_hint(context, want.name, index));
  }
  const Rule rule = rule_for(context, want, pins);
  const OtherRequirements others = other_requirements(context, want, rule, draft.leaving());
  std::optional<index::Candidate> best = best_candidate(want, rule, others, index);
  if (!best) {
    VENVFIX_TRY(explain_no_candidate(context, want, rule, others, index, draft));
    return std::optional<Addition>();
  }
  VENVFIX_TRY_ASSIGN(Addition install, make_install(context, want, rule, *best, index));
  return std::optional<Addition>(std::move(install));
}

}  // namespace venvfix::plan::detail
