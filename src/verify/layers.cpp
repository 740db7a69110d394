// Which layer a distribution sits in: the environment's own, a venv's base prefix, or the
// system package manager's.
#include <algorithm>

#include "steps.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::verify {

std::string layer_label(const env::Venv& venv, const dist::Distribution& dist) {
  if (venv.is_system_site(dist.site_packages)) {
    std::string installer = to_lower_ascii(trim(dist.installer));
    if (installer != "pip" && installer != "uv" && installer != "venvfix") return "system";
  }
  return venv.layer_of(dist.site_packages) == env::Layer::base ? "base" : "";
}

bool inside_environment(const env::Venv& venv, const fs::path& path) {
  if (is_inside(path, venv.root)) return true;
  return std::any_of(venv.site_packages.begin(), venv.site_packages.end(),
                     [&](const fs::path& site) { return is_inside(path, site); });
}

namespace {

const dist::Distribution* find_dist(const Analysis& analysis, const Finding& finding) {
  const dist::Distribution* first = nullptr;
  for (const dist::Distribution& dist : analysis.inventory.distributions) {
    if (dist.normalized_name != finding.dist) continue;
    if (finding.version.empty() || dist.version == finding.version) return &dist;
    if (first == nullptr) first = &dist;
  }
  return first;
}

// A distribution of the same name in the venv's own layer comes first on sys.path: Python
// imports and pip sees that one, and the base's is shadowed.
const dist::Distribution* shadowing(const Analysis& analysis, const dist::Distribution& dist) {
  for (const dist::Distribution& other : analysis.inventory.distributions) {
    if (other.normalized_name == dist.normalized_name &&
        analysis.venv.layer_of(other.site_packages) == env::Layer::own) {
      return &other;
    }
  }
  return nullptr;
}

}  // namespace

void label_layers(Analysis& analysis) {
  for (Finding& finding : analysis.findings) {
    if (finding.dist.empty()) continue;
    const dist::Distribution* dist = find_dist(analysis, finding);
    if (dist == nullptr) continue;
    finding.layer = layer_label(analysis.venv, *dist);
    if (finding.layer == "base") {
      finding.message += fmt::format(" (in the base prefix {}, which the venv sees)",
                                     analysis.venv.base_prefix.string());
      if (const dist::Distribution* own = shadowing(analysis, *dist);
          own != nullptr && (finding.kind() == FindingKind::ghost_files ||
                             finding.kind() == FindingKind::clobbered_files)) {
        finding.severity = Severity::warning;
        finding.message += fmt::format("; the venv's own {} shadows it", dist_label(*own));
      }
    } else if (finding.layer == "system") {
      finding.message += fmt::format(
          " ({} is owned by the system package manager: venvfix never removes or replaces it)",
          dist_label(*dist));
    }
  }
}

}  // namespace venvfix::verify
