#include <algorithm>
#include <map>
#include <set>

#include "steps.hpp"
#include "venvfix/dist/scan.hpp"
#include "venvfix/elf/elf_file.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/pep/requirement.hpp"

namespace venvfix::verify {

namespace {

bool holds_libraries(const dist::Distribution& dist, const manifest::Manifests& manifests) {
  if (const manifest::Distribution* known = manifests.find_distribution(dist.normalized_name)) {
    if (!known->lib_dir.empty()) return true;
  }
  return std::any_of(dist.record.begin(), dist.record.end(),
                     [](const dist::RecordEntry& e) { return looks_like_shared_object(e.path); });
}

std::string relative_to_root(const Analysis& analysis, const fs::path& path) {
  return path.lexically_relative(analysis.venv.root).string();
}

void check_split_site_packages(Analysis& analysis, const manifest::Manifests& manifests) {
  if (analysis.venv.site_packages.size() < 2) return;
  const auto& distributions = analysis.inventory.distributions;
  for (const Target& target : analysis.targets) {
    const dist::Distribution& target_dist = distributions[target.dist];
    std::vector<std::string> elsewhere;
    std::set<std::string> other_dirs;
    const env::Layer target_layer = analysis.venv.layer_of(target_dist.site_packages);
    bool same_layer = false;  // a split inside one environment, not across venv and base
    for (std::size_t i = 0; i < distributions.size(); ++i) {
      const dist::Distribution& other = distributions[i];
      if (i == target.dist || !analysis.needed[i]) continue;
      if (other.site_packages == target_dist.site_packages) continue;
      if (!holds_libraries(other, manifests)) continue;
      elsewhere.push_back(other.normalized_name);
      other_dirs.insert(relative_to_root(analysis, other.site_packages));
      same_layer |= analysis.venv.layer_of(other.site_packages) == target_layer;
    }
    if (elsewhere.empty()) continue;
    Finding finding;
    finding.detail = SplitSitePackages{elsewhere};
    // Across a venv and its base prefix the split is what pip makes of every install into such
    // a venv; whether torch's sys.path preload then finds the libraries is the loading check's
    // verdict (unresolved-soname), so the split itself is a warning there.
    finding.severity = same_layer ? Severity::problem : Severity::warning;
    finding.dist = target_dist.normalized_name;
    finding.version = target_dist.version;
    finding.paths.push_back(relative_to_root(analysis, target_dist.site_packages));
    finding.paths.insert(finding.paths.end(), other_dirs.begin(), other_dirs.end());
    finding.message = fmt::format(
        "{} is installed in {} but {} of the distributions it loads ({}) are in {}: its "
        "$ORIGIN-relative RPATH only searches its own site-packages",
        target_dist.normalized_name, finding.paths.front(), elsewhere.size(), join(elsewhere, ", "),
        join(std::vector<std::string>(other_dirs.begin(), other_dirs.end()), ", "));
    if (!same_layer)
      finding.message += " (the venv and its base prefix: torch's preload searches both)";
    analysis.findings.push_back(std::move(finding));
  }
}

// Installed distributions whose Requires-Dist (markers true for this venv) names `name`.
std::vector<std::string> required_by(const Analysis& analysis, const std::string& name) {
  std::vector<std::string> out;
  for (const dist::Distribution& dist : analysis.inventory.distributions) {
    for (const std::string& text : dist.metadata.requires_dist) {
      auto requirement = pep::Requirement::parse(text);
      if (!requirement || pep::normalize_name(requirement->name) != name) continue;
      if (requirement->marker && !requirement->marker->evaluate(analysis.markers, {})) continue;
      out.push_back(dist.normalized_name);
      break;
    }
  }
  return out;
}

// "; removing it with pip would delete nvidia/cudnn/lib/libcudnn.so.9, which torch needs;
// nvidia-cudnn-cu12 lists it too"
std::string breakage_text(const Analysis& analysis, std::size_t removed_dist,
                          const Breakage& breakage) {
  if (!breakage.first_file) return {};
  std::vector<std::string> co_owners;
  for (std::size_t owner : analysis.inventory.owners_of(*breakage.first_file)) {
    if (owner != removed_dist) {
      co_owners.push_back(analysis.inventory.distributions[owner].normalized_name);
    }
  }
  std::string more = breakage.sonames.size() > 1
                         ? fmt::format(" (and {} more of its sonames)", breakage.sonames.size() - 1)
                         : std::string();
  std::string text =
      fmt::format("; removing it with pip would delete {}{}, which {} needs",
                  analysis.display_path(*breakage.first_file), more, analysis.target_names());
  if (!co_owners.empty()) {
    text +=
        fmt::format("; {} list{} it too", join(co_owners, ", "), co_owners.size() == 1 ? "s" : "");
  }
  return text;
}

void check_cuda_mix(Analysis& analysis, const manifest::Manifests& manifests) {
  const auto& distributions = analysis.inventory.distributions;
  for (const Target& target : analysis.targets) {
    if (target.cuda_major == 0) continue;
    for (std::size_t i = 0; i < distributions.size(); ++i) {
      const dist::Distribution& dist = distributions[i];
      const manifest::Distribution* known = manifests.find_distribution(dist.normalized_name);
      if (known == nullptr || known->cuda_major == 0 || known->cuda_major == target.cuda_major) {
        continue;
      }
      // Conflicting: shares a path with a distribution the target needs, or its bytes sit in
      // such a distribution's files.
      std::set<std::string> victims;
      for (const dist::RecordEntry& entry : dist.record) {
        fs::path path = (dist.site_packages / entry.path).lexically_normal();
        for (std::size_t owner : analysis.inventory.owners_of(path)) {
          if (owner != i && analysis.needed[owner]) {
            victims.insert(distributions[owner].normalized_name);
          }
        }
      }
      for (const Finding& finding : analysis.findings) {
        const auto* clobbered = finding.as<ClobberedFiles>();
        if (clobbered != nullptr && std::find(clobbered->dists.begin(), clobbered->dists.end(),
                                              dist.normalized_name) != clobbered->dists.end()) {
          const dist::Distribution* victim = analysis.inventory.find(finding.dist);
          if (victim != nullptr &&
              analysis.needed[static_cast<std::size_t>(victim - distributions.data())]) {
            victims.insert(finding.dist);
          }
        }
      }
      CudaMix mix;
      mix.conflicts = !victims.empty();
      mix.cuda_major = known->cuda_major;
      mix.target_cuda_major = target.cuda_major;
      mix.dists.assign(victims.begin(), victims.end());
      mix.required_by_installed = required_by(analysis, dist.normalized_name);
      Breakage breakage = removal_breaks(analysis, i);
      mix.breaks = breakage.sonames;
      Finding finding;
      finding.severity = mix.conflicts ? Severity::problem : Severity::warning;
      finding.dist = dist.normalized_name;
      finding.version = dist.version;
      const dist::Distribution& target_dist = distributions[target.dist];
      finding.message = fmt::format("{} is a CUDA {} distribution beside {} (built for CUDA {})",
                                    dist_label(dist), known->cuda_major, dist_label(target_dist),
                                    target.cuda_major);
      if (mix.conflicts) {
        finding.message +=
            fmt::format(", and it shares or overwrote files of {}", join(mix.dists, ", "));
      }
      finding.message += breakage_text(analysis, i, breakage);
      if (!mix.required_by_installed.empty()) {
        finding.message += fmt::format("; {} require{} it", join(mix.required_by_installed, ", "),
                                       mix.required_by_installed.size() == 1 ? "s" : "");
      }
      finding.detail = std::move(mix);
      analysis.findings.push_back(std::move(finding));
    }
  }
}

void check_orphans(Analysis& analysis, const SiteScan& scan) {
  std::map<fs::path, std::vector<std::string>> by_directory;
  for (const dist::ScannedFile& file : scan.files) {
    if (!analysis.inventory.owners_of(file.path).empty()) continue;
    if (!elf::has_elf_magic(file.path)) continue;
    by_directory[file.path.parent_path()].push_back(analysis.display_path(file.path));
  }
  for (auto& [directory, paths] : by_directory) {
    std::sort(paths.begin(), paths.end());
    // Built with its kind (GCC 12 warns, wrongly, when an empty kind replaces the default).
    Finding finding{Severity::warning, {}, {}, {}, std::move(paths), OrphanLibrary{}, {}};
    finding.message =
        fmt::format("{} ELF object{} in {} belong{} to no installed distribution's RECORD",
                    finding.paths.size(), finding.paths.size() == 1 ? "" : "s",
                    analysis.display_path(directory), finding.paths.size() == 1 ? "s" : "");
    analysis.findings.push_back(std::move(finding));
  }
  check_stashes(analysis, scan.stashes);  // never entered: what pip stashed is no orphan
}

}  // namespace

Breakage removal_breaks(const Analysis& analysis, std::size_t removed_dist) {
  const dist::Distribution& dist = analysis.inventory.distributions[removed_dist];
  std::set<fs::path> removed;
  for (const dist::RecordEntry& entry : dist.record) {
    removed.insert((dist.site_packages / entry.path).lexically_normal());
  }
  auto survives = [&](const fs::path& path) {
    std::error_code error;
    return removed.count(path) == 0 && fs::exists(path, error);
  };
  std::set<std::string> sonames;
  Breakage out;
  for (const SonameUse& use : analysis.uses) {
    if (!use.resolution.resolved() || removed.count(use.consumer)) continue;
    fs::path path = use.resolution.path->lexically_normal();
    if (!removed.count(path) || sonames.count(use.soname)) continue;
    bool replaced = std::any_of(analysis.preloaded.begin(), analysis.preloaded.end(),
                                [&](const fs::path& preloaded) {
                                  fs::path normal = preloaded.lexically_normal();
                                  return normal.filename() == use.soname && survives(normal);
                                });
    for (const fs::path& dir : use.resolution.searched) {
      fs::path candidate = (dir / use.soname).lexically_normal();
      if (replaced || !inside_environment(analysis.venv, candidate)) continue;
      replaced = survives(candidate);
    }
    if (replaced) continue;
    sonames.insert(use.soname);
    if (!out.first_file) out.first_file = path;
  }
  out.sonames.assign(sonames.begin(), sonames.end());
  return out;
}

SiteScan scan_site(const env::Venv& venv) {
  SiteScan scan;
  scan.files = dist::scan_site_packages(venv, &scan.stashes);
  return scan;
}

void check_layout(Analysis& analysis, const manifest::Manifests& manifests, const SiteScan& scan) {
  check_split_site_packages(analysis, manifests);
  check_cuda_mix(analysis, manifests);
  check_orphans(analysis, scan);
}

}  // namespace venvfix::verify
