// dist-info anomalies (RECORD or METADATA missing, empty or unreadable; a directory name that
// disagrees with METADATA) and pip's '~' stashes. Severities and what pip does with each:
// docs/doctor.md, "dist-info and pip-stash".
#include <algorithm>

#include "steps.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/dist/metadata.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/pep/version.hpp"

namespace venvfix::verify {

namespace {

using dist::MetadataFileState;

std::string_view state_word(MetadataFileState state) {
  switch (state) {
    case MetadataFileState::missing:
      return "missing";
    case MetadataFileState::empty:
      return "empty";
    case MetadataFileState::unreadable:
      return "unreadable";
    case MetadataFileState::invalid:
      return "invalid";
    case MetadataFileState::ok:
      break;
  }
  return "ok";
}

// What the state means, as the end of a sentence about `file`.
std::string state_phrase(MetadataFileState state, std::string_view file) {
  switch (state) {
    case MetadataFileState::missing:
      return fmt::format("has no {}", file);
    case MetadataFileState::empty:
      return fmt::format("has an empty {}", file);
    case MetadataFileState::unreadable:
      return fmt::format("has a {} that cannot be read", file);
    case MetadataFileState::invalid:
      return file == "RECORD" ? "has a RECORD without one usable row"
                              : "has a METADATA without a valid Name and Version";
    case MetadataFileState::ok:
      break;
  }
  return "";
}

Finding anomaly_finding(const Analysis& analysis, std::size_t index, std::string anomaly) {
  const dist::Distribution& dist = analysis.inventory.distributions[index];
  Finding finding;
  finding.detail = DistInfo{std::move(anomaly)};
  finding.dist = dist.normalized_name;
  finding.version = dist.version;
  finding.paths = {analysis.display_path(dist.metadata_dir)};
  return finding;
}

// RECORD or METADATA not usable: a problem when a target needs the distribution (venvfix
// cannot check the files a target loads, pip cannot uninstall or upgrade it cleanly), else a
// warning. The repair is pip's own advice: reinstall that version (plan does).
void check_file(Analysis& analysis, std::size_t index, MetadataFileState state,
                std::string_view file) {
  if (state == MetadataFileState::ok) return;
  const dist::Distribution& dist = analysis.inventory.distributions[index];
  std::string lower = file == "RECORD" ? "record" : "metadata";
  Finding finding = anomaly_finding(analysis, index, lower + "-" + std::string(state_word(state)));
  finding.severity = analysis.needed[index] ? Severity::problem : Severity::warning;
  std::string consequence =
      file == "RECORD"
          ? "its files cannot be checked and pip cannot uninstall or upgrade it cleanly"
          : "its version and requirements are unknown to pip and to venvfix";
  finding.message = fmt::format(
      "{} {} ({}): {}; reinstalling {}=={} with pip --force-reinstall --no-deps, or venvfix "
      "plan, rewrites it",
      dist_label(dist), state_phrase(state, file), finding.paths.front(), consequence,
      dist.normalized_name, dist.version);
  analysis.findings.push_back(std::move(finding));
}

bool same_version(const dist::Distribution& dist) {
  const std::string& dir_version = dist.directory_version;
  auto a = pep::Version::try_parse(dir_version);
  auto b = pep::Version::try_parse(dist.metadata.version);
  return dist.metadata_state != MetadataFileState::ok || dir_version.empty() ||
         (a && b ? *a == *b : dir_version == dist.metadata.version);
}

bool same_name(const dist::Distribution& dist) {
  return dist.metadata_state != MetadataFileState::ok ||
         pep::normalize_name(dist.directory_name) == dist.normalized_name;
}

// The directory's name against METADATA: pip and importlib take the version from METADATA and
// the name from the directory; uv takes both from the directory. Versions compare as PEP 440.
void check_names(Analysis& analysis, std::size_t index) {
  const dist::Distribution& dist = analysis.inventory.distributions[index];
  const std::string& dir_version = dist.directory_version;
  if (!same_version(dist)) {
    Finding finding = anomaly_finding(analysis, index, "version-mismatch");
    finding.severity = Severity::warning;
    finding.message = fmt::format(
        "{} is named for version {} but its METADATA says {}: pip reports {}, uv reads {} from "
        "the directory name",
        finding.paths.front(), dir_version, dist.metadata.version, dist.metadata.version,
        dir_version);
    analysis.findings.push_back(std::move(finding));
  }
  if (!same_name(dist)) {
    Finding finding = anomaly_finding(analysis, index, "name-mismatch");
    finding.severity = Severity::warning;
    finding.message = fmt::format("{} holds the METADATA of {}: pip lists it as {}, venvfix as {}",
                                  finding.paths.front(), dist.metadata.name,
                                  pep::normalize_name(dist.directory_name), dist.normalized_name);
    analysis.findings.push_back(std::move(finding));
  }
}

// The METADATA of a dist-info stash (the distribution it held), when it reads.
std::optional<dist::CoreMetadata> stash_metadata(const fs::path& stash) {
  auto text = read_file(stash / "METADATA", 16u << 20);
  if (!text) return std::nullopt;
  auto parsed = dist::parse_metadata(*text, (stash / "METADATA").string());
  if (!parsed) return std::nullopt;
  return std::move(*parsed);
}

}  // namespace

bool dist_info_explains(const dist::Distribution& dist, std::string_view record_path) {
  if (dist.legacy_egg_info) return false;
  std::string_view top = record_path.substr(0, record_path.find('/'));
  if (!top.ends_with(".dist-info") || top.size() == record_path.size()) return false;
  return dist.metadata_state != MetadataFileState::ok || !same_version(dist) || !same_name(dist);
}

void check_dist_info(Analysis& analysis) {
  const auto& distributions = analysis.inventory.distributions;
  for (std::size_t i = 0; i < distributions.size(); ++i) {
    if (distributions[i].legacy_egg_info) continue;
    check_file(analysis, i, distributions[i].record_state, "RECORD");
    check_file(analysis, i, distributions[i].metadata_state, "METADATA");
    check_names(analysis, i);
  }
}

void check_stashes(Analysis& analysis, const std::vector<fs::path>& stashes) {
  for (const fs::path& stash : stashes) {
    // Built with its kind (GCC 12 warns, wrongly, when an empty kind replaces the default).
    Finding finding{Severity::warning, {}, {}, {}, {analysis.display_path(stash)}, PipStash{}, {}};
    std::string what = "files";
    if (stash.filename().string().ends_with(".dist-info")) {
      if (auto metadata = stash_metadata(stash)) {
        finding.dist = pep::normalize_name(metadata->name);
        finding.version = metadata->version;
        what = fmt::format("the metadata of {} {}", finding.dist, finding.version);
      } else {
        what = "a dist-info";
      }
    }
    finding.message = fmt::format(
        "{} holds {} that an interrupted pip uninstall or upgrade stashed there and never deleted: "
        "pip ignores it and nothing imports or loads from it; delete it once the venv is as "
        "wanted",
        finding.paths.front(), what);
    analysis.findings.push_back(std::move(finding));
  }
}

}  // namespace venvfix::verify
