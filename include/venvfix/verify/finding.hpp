// A finding: something wrong with a venv, collected as data for the report (doctor), the
// planner and the transaction checks. Kinds and JSON field names are fixed by the contract
// (docs/doctor.md lists them, with the fields of each kind).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace venvfix::verify {

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

struct Finding {
  FindingKind kind = FindingKind::ghost_files;
  Severity severity = Severity::warning;
  std::string message;  // one sentence

  // Fields by kind; empty ones are left out of the JSON.
  std::string dist;  // the distribution the finding is about
  std::string version;
  std::vector<std::string> paths;       // site-packages-relative paths
  std::vector<std::string> missing;     // ghost-files: listed in RECORD, absent
  std::vector<std::string> mismatched;  // ghost-files: present, size or hash differs
  std::vector<std::string> dists;       // shared-paths: owners; clobbered-files: whose bytes
  std::string soname;
  std::vector<std::string> sonames;    // a grouped warning: every soname it is about (soname first)
  std::vector<std::string> needed_by;  // site-packages-relative consumers
  std::string resolved_to;             // escaped-soname: where the loader finds it
  std::string requirement;             // unmet-requirement: the Requires-Dist text
  std::string required_by;
  std::vector<std::string> required_by_installed;  // cuda-mix: what removing it would break
  int cuda_major = 0;  // cuda-mix: the foreign distribution's CUDA major
  int target_cuda_major = 0;
  bool conflicts = false;  // cuda-mix
  // cuda-mix: the target sonames that removing it the way pip does (every RECORD path deleted,
  // co-owners ignored) would leave unresolved or outside the venv.
  std::vector<std::string> breaks;
  // unresolved/escaped-soname warnings: the ways of loading torch on which it fails (it
  // resolves on another one).
  std::vector<std::string> fails_when;
  std::string note;  // e.g. "provided by the GPU driver"
  // dist-info: "record-missing", "record-empty", "record-unreadable", "record-invalid",
  // "metadata-missing", "metadata-empty", "metadata-unreadable", "metadata-invalid",
  // "version-mismatch", "name-mismatch" (docs/doctor.md).
  std::string anomaly;
  // Every kind: where `dist` sits when it is not the environment's own layer ("base",
  // "system"; verify::layer_label).
  std::string layer;
};

nlohmann::json to_json(const Finding& finding);

// Orders findings for stable output: problems first, then by kind, distribution, soname, paths.
void sort_findings(std::vector<Finding>& findings);

}  // namespace venvfix::verify
