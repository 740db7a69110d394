#include "venvfix/index/select.hpp"

#include <set>

#include <fmt/format.h>

#include "venvfix/base/strings.hpp"
#include "venvfix/index/url.hpp"

namespace venvfix::index {

namespace {

// `==V` (without a wildcard) or `===V`: a pin, the only case in which PEP 592 allows a
// yanked file.
bool is_pinned(const pep::SpecifierSet& specifier) {
  for (const pep::Specifier& clause : specifier.specifiers()) {
    if (clause.op() == pep::Specifier::Operator::arbitrary) return true;
    if (clause.op() == pep::Specifier::Operator::equal && !clause.has_wildcard()) return true;
  }
  return false;
}

std::string python_version_text(const pep::TargetPython& target) {
  if (!target.full_version.empty()) return target.full_version;
  return fmt::format("{}.{}.0", target.major, target.minor);
}

struct Considered {
  std::vector<Candidate> candidates;
  std::vector<Candidate> yanked;  // fit in every way but being yanked
  // The newest version that satisfied the specifier but had no compatible tag, for the
  // message when nothing fits.
  std::optional<pep::WheelFilename> newest_incompatible;
};

void skip(SelectionLog* log, const IndexFile& file, std::string reason) {
  if (log != nullptr) log->skipped.push_back({file.filename, std::move(reason)});
}

Considered consider(const ProjectPage& page, const pep::SpecifierSet& specifier,
                    const pep::TargetPython& target, const std::set<std::string>& supported,
                    pep::PreReleases pre, SelectionLog* log) {
  Considered out;
  std::optional<pep::Version> python;
  if (auto parsed = pep::Version::parse(python_version_text(target))) python = *parsed;
  for (const IndexFile& file : page.files) {
    if (!file.filename.ends_with(".whl")) {
      skip(log, file, "not a wheel (venvfix installs wheels only)");
      continue;
    }
    Result<pep::WheelFilename> wheel = pep::WheelFilename::parse(file.filename);
    if (!wheel) {
      skip(log, file, "not a valid wheel name: " + wheel.error().message);
      continue;
    }
    if (wheel->normalized_name != page.project) {
      skip(log, file, "belongs to " + wheel->normalized_name);
      continue;
    }
    if (!specifier.contains(wheel->version, pre)) {
      skip(log, file,
           fmt::format("version {} does not satisfy '{}'", wheel->version.to_string(),
                       specifier.to_string()));
      continue;
    }
    if (file.requires_python && python) {
      Result<pep::SpecifierSet> python_range = pep::SpecifierSet::parse(*file.requires_python);
      if (python_range && !python_range->contains(*python, pep::PreReleases::allow)) {
        skip(log, file,
             fmt::format("requires Python {}, the venv has {}", *file.requires_python,
                         python_version_text(target)));
        continue;
      }
    }
    bool compatible = false;
    for (const pep::Tag& tag : wheel->tags())
      compatible = compatible || supported.contains(tag.to_string());
    if (!compatible) {
      skip(log, file, "no tag this interpreter and platform accept");
      if (!out.newest_incompatible || out.newest_incompatible->version < wheel->version) {
        out.newest_incompatible = *wheel;
      }
      continue;
    }
    if (file.yanked) {
      skip(log, file,
           file.yanked_reason && !file.yanked_reason->empty()
               ? fmt::format("yanked ({})", *file.yanked_reason)
               : std::string("yanked"));
      out.yanked.push_back({file, std::move(*wheel)});
      continue;
    }
    out.candidates.push_back({file, std::move(*wheel)});
  }
  return out;
}

std::optional<Candidate> best_of(std::vector<Candidate>& candidates,
                                 const std::vector<pep::Tag>& supported) {
  std::vector<pep::WheelFilename> wheels;
  wheels.reserve(candidates.size());
  for (const Candidate& candidate : candidates) wheels.push_back(candidate.wheel);
  std::optional<std::size_t> best = pep::select_best_wheel(wheels, supported);
  if (!best) return std::nullopt;
  return candidates[*best];
}

}  // namespace

Result<Candidate> select_wheel(const ProjectPage& page, const pep::SpecifierSet& specifier,
                               const pep::TargetPython& target, SelectionLog* why_skipped) {
  std::vector<pep::Tag> supported = pep::supported_tags(target);
  std::set<std::string> supported_text;
  for (const pep::Tag& tag : supported) supported_text.insert(tag.to_string());

  SelectionLog first_log;
  Considered considered =
      consider(page, specifier, target, supported_text, pep::PreReleases::unless_asked, &first_log);
  if (considered.candidates.empty() && considered.yanked.empty() && specifier.empty()) {
    // pip's fallback: with no specifier, pre-releases when no final release fits (with
    // clauses, packaging never falls back; see pep/specifier.hpp).
    SelectionLog pre_log;
    Considered with_pre =
        consider(page, specifier, target, supported_text, pep::PreReleases::allow, &pre_log);
    if (!with_pre.candidates.empty() || !with_pre.yanked.empty()) {
      considered = std::move(with_pre);
      first_log = std::move(pre_log);
    }
  }
  if (why_skipped != nullptr) {
    for (auto& skipped : first_log.skipped) why_skipped->skipped.push_back(std::move(skipped));
  }
  if (std::optional<Candidate> best = best_of(considered.candidates, supported)) return *best;
  if (is_pinned(specifier)) {
    if (std::optional<Candidate> best = best_of(considered.yanked, supported)) return *best;
  }

  std::string where =
      page.page_url.empty() ? std::string("find-links") : display_url(page.page_url);
  std::string wanted =
      specifier.empty() ? std::string("any version") : "'" + specifier.to_string() + "'";
  std::vector<std::string> best_tags;
  for (std::size_t i = 0; i < supported.size() && i < 3; ++i)
    best_tags.push_back(supported[i].to_string());
  std::string detail;
  if (considered.newest_incompatible) {
    std::vector<std::string> tags;
    for (const pep::Tag& tag : considered.newest_incompatible->tags())
      tags.push_back(tag.to_string());
    detail = fmt::format("; the newest matching version, {}, has only {}",
                         considered.newest_incompatible->version.to_string(), join(tags, ", "));
  } else if (!considered.yanked.empty()) {
    detail = "; every matching wheel is yanked";
  } else if (!first_log.skipped.empty()) {
    detail = fmt::format("; {} file{} skipped (use -v to see why)", first_log.skipped.size(),
                         first_log.skipped.size() == 1 ? " was" : "s were");
  }
  return make_error(ExitCode::network, "no wheel of {} {} on {} fits Python {}.{} ({}, …){}",
                    page.project, wanted, where, target.major, target.minor, join(best_tags, ", "),
                    detail);
}

}  // namespace venvfix::index
