#include "venvfix/verify/finding.hpp"

#include <algorithm>
#include <tuple>

#include <nlohmann/json.hpp>

namespace venvfix::verify {

std::string_view to_string(FindingKind kind) {
  switch (kind) {
    case FindingKind::ghost_files:
      return "ghost-files";
    case FindingKind::clobbered_files:
      return "clobbered-files";
    case FindingKind::shared_paths:
      return "shared-paths";
    case FindingKind::unresolved_soname:
      return "unresolved-soname";
    case FindingKind::escaped_soname:
      return "escaped-soname";
    case FindingKind::split_site_packages:
      return "split-site-packages";
    case FindingKind::cuda_mix:
      return "cuda-mix";
    case FindingKind::unmet_requirement:
      return "unmet-requirement";
    case FindingKind::orphan_library:
      return "orphan-library";
    case FindingKind::dist_info:
      return "dist-info";
    case FindingKind::pip_stash:
      return "pip-stash";
  }
  return "unknown";
}

std::string_view to_string(Severity severity) {
  return severity == Severity::problem ? "problem" : "warning";
}

nlohmann::json to_json(const Finding& finding) {
  nlohmann::json out = {{"kind", to_string(finding.kind)},
                        {"severity", to_string(finding.severity)},
                        {"message", finding.message}};
  auto put = [&](const char* key, const auto& value) {
    if (!value.empty()) out[key] = value;
  };
  put("dist", finding.dist);
  put("version", finding.version);
  put("paths", finding.paths);
  put("missing", finding.missing);
  put("mismatched", finding.mismatched);
  put("dists", finding.dists);
  put("soname", finding.soname);
  put("sonames", finding.sonames);
  put("needed_by", finding.needed_by);
  put("resolved_to", finding.resolved_to);
  put("requirement", finding.requirement);
  put("required_by", finding.required_by);
  put("required_by_installed", finding.required_by_installed);
  put("note", finding.note);
  put("fails_when", finding.fails_when);
  put("anomaly", finding.anomaly);
  put("layer", finding.layer);
  if (finding.kind == FindingKind::cuda_mix) {
    out["cuda_major"] = finding.cuda_major;
    out["target_cuda_major"] = finding.target_cuda_major;
    out["conflicts"] = finding.conflicts;
    out["breaks"] = finding.breaks;
  }
  return out;
}

void sort_findings(std::vector<Finding>& findings) {
  auto key = [](const Finding& f) {
    return std::tie(f.severity, f.kind, f.dist, f.soname, f.paths, f.message);
  };
  std::stable_sort(findings.begin(), findings.end(),
                   [&](const Finding& a, const Finding& b) { return key(a) < key(b); });
}

}  // namespace venvfix::verify
