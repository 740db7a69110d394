// A finding: something wrong with a venv, collected as data for the report (doctor), the
// planner and the transaction checks. Kinds and JSON field names are fixed by the contract
// (docs/doctor.md lists them, with the fields of each kind).
//
// A finding is the fields every kind may have (severity, message, the distribution and the
// paths it is about) plus one struct of its kind's own fields; the kind is which struct it
// holds. JSON exists only in to_json/finding_from_json below.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "venvfix/base/result.hpp"

namespace venvfix::verify {

// In the order of Finding::Detail's alternatives (finding.cpp checks it).
enum class FindingKind {
  ghost_files,
  clobbered_files,
  shared_paths,
  unresolved_soname,
  escaped_soname,
  split_site_packages,
  cuda_mix,
  unmet_requirement,
  orphan_library,
  dist_info,  // a .dist-info that pip or venvfix cannot fully trust; `anomaly` says how
  pip_stash,  // a '~' directory an interrupted pip uninstall/upgrade left behind
};

// "ghost-files", "unresolved-soname", … as the contract spells them.
std::string_view to_string(FindingKind kind);

enum class Severity { problem, warning };
std::string_view to_string(Severity severity);
// Whether a warning counts as a problem too (doctor --strict): has_problems' question.
enum class Strict { no, yes };

// The fields of each kind; empty ones are left out of the JSON (cuda-mix writes all four of
// its numbers and flags, `breaks` included).
struct GhostFiles {
  std::vector<std::string> missing;     // listed in RECORD, absent
  std::vector<std::string> mismatched;  // present, size or hash differs
};
struct ClobberedFiles {
  std::vector<std::string> dists;  // whose bytes the paths hold
};
struct SharedPaths {
  std::vector<std::string> dists;  // the owners
};
struct UnresolvedSoname {
  std::string soname;
  std::vector<std::string> sonames;    // a grouped warning: every soname it is about (soname first)
  std::vector<std::string> needed_by;  // site-packages-relative consumers
  // As a warning: the ways of loading torch on which it fails (it resolves on another one).
  std::vector<std::string> fails_when;
  std::string note;  // e.g. "provided by the GPU driver"
};
struct EscapedSoname {
  std::string soname;
  std::vector<std::string> needed_by;
  std::string resolved_to;  // where the loader finds it
};
struct SplitSitePackages {
  std::vector<std::string> dists;  // what the target loads from another site-packages
};
struct CudaMix {
  int cuda_major = 0;  // the foreign distribution's CUDA major
  int target_cuda_major = 0;
  bool conflicts = false;
  std::vector<std::string> dists;                  // what it conflicts with
  std::vector<std::string> required_by_installed;  // what removing it would break
  // The target sonames that removing it the way pip does (every RECORD path deleted,
  // co-owners ignored) would leave unresolved or outside the venv.
  std::vector<std::string> breaks;
};
struct UnmetRequirement {
  std::string requirement;  // the Requires-Dist text
  std::string required_by;
};
struct OrphanLibrary {};
struct DistInfo {
  // "record-missing", "record-empty", "record-unreadable", "record-invalid",
  // "metadata-missing", "metadata-empty", "metadata-unreadable", "metadata-invalid",
  // "version-mismatch", "name-mismatch" (docs/doctor.md).
  std::string anomaly;
};
struct PipStash {};

struct Finding {
  using Detail =
      std::variant<GhostFiles, ClobberedFiles, SharedPaths, UnresolvedSoname, EscapedSoname,
                   SplitSitePackages, CudaMix, UnmetRequirement, OrphanLibrary, DistInfo, PipStash>;

  Severity severity = Severity::warning;
  std::string message;  // one sentence
  // The distribution the finding is about (none for the soname kinds, shared-paths and
  // orphan-library), its version, and site-packages-relative paths.
  std::string dist;
  std::string version;
  std::vector<std::string> paths;
  Detail detail;
  // Where `dist` sits when it is not the environment's own layer ("base", "system";
  // verify::layer_label); "" for the venv's own.
  std::string layer;

  FindingKind kind() const { return static_cast<FindingKind>(detail.index()); }
  // The kind's fields, or nullptr for another kind.
  template <typename T>
  const T* as() const {
    return std::get_if<T>(&detail);
  }
};

// The soname an unresolved-soname or escaped-soname finding is about; "" for other kinds.
std::string_view soname_of(const Finding& finding);

// Whether the JSON carries "severity": doctor, the plan's findings and apply reports do; the
// plan's `unresolved` entries do not (what a plan cannot fix is a problem).
enum class SeverityField { written, omitted };

nlohmann::json to_json(const Finding& finding, SeverityField severity = SeverityField::written);

// Reads what to_json wrote. An error (with `code`) names `context` and the field: an unknown
// kind or severity, a missing message, a field of the wrong type. Without the severity field a
// finding is a problem.
Result<Finding> finding_from_json(const nlohmann::json& value, const std::string& context,
                                  ExitCode code, SeverityField severity = SeverityField::written);

// Orders findings for stable output: problems first, then by kind, distribution, soname, paths.
void sort_findings(std::vector<Finding>& findings);

}  // namespace venvfix::verify
