#include <algorithm>
#include <map>
#include <set>

#include <spdlog/spdlog.h>

#include "steps.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/elf/elf_file.hpp"
#include "venvfix/pep/version.hpp"
#include "venvfix/verify/torch_preload.hpp"

namespace venvfix::verify {

namespace {

std::vector<std::string> sorted_listing(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

void compute_preload(Analysis& analysis, const manifest::Manifests& manifests) {
  std::map<fs::path, std::vector<std::string>> listings;
  analysis.preloaded = torch_preloads(
      analysis, manifests, [&](const fs::path& dir) -> const auto& {
        auto [it, inserted] = listings.try_emplace(dir);
        if (inserted) it->second = sorted_listing(dir);
        return it->second;
      });
}

// What a loaded venv object loads with dlopen by bare soname (cuDNN's sub-libraries): the
// manifest release matching the installed version of the distribution whose RECORD owns it.
// The set changes with the version (cuDNN 9.21 added libcudnn_engines_tensor_ir.so.9).
std::vector<std::string> dlopens_of(const Analysis& analysis, const manifest::Manifests& manifests,
                                    const fs::path& path, const std::string& soname) {
  for (std::size_t owner : analysis.inventory.owners_of(path.lexically_normal())) {
    const dist::Distribution& dist = analysis.inventory.distributions[owner];
    const manifest::Distribution* known = manifests.find_distribution(dist.normalized_name);
    if (known == nullptr) continue;
    auto version = pep::Version::parse(dist.version);
    if (!version) continue;
    const manifest::Release* release = known->release_for(*version);
    if (release == nullptr) continue;
    if (const manifest::Library* library = release->find_library(soname)) return library->dlopens;
  }
  return {};
}

std::optional<fs::path> venv_executable(const env::Venv& venv) {
  for (const char* name : {"bin/python3", "bin/python"}) {
    fs::path candidate = venv.root / name;
    if (elf::has_elf_magic(candidate)) return candidate;
  }
  return std::nullopt;
}

void collect_uses(Analysis& analysis, const manifest::Manifests& manifests,
                  const elf::SystemView& system) {
  auto source = std::make_shared<elf::ElfSource>();
  elf::Resolver resolver(system, source, venv_executable(analysis.venv));
  std::set<std::pair<std::string, std::string>> seen;  // (consumer, soname)

  auto add_use = [&](const fs::path& consumer, const elf::Resolution& resolution, bool dlopen) {
    fs::path normal = consumer.lexically_normal();
    if (!is_inside(normal, analysis.venv.root)) return;  // the system's own needs are not ours
    if (!seen.insert({normal.string(), resolution.soname}).second) return;
    analysis.uses.push_back({resolution.soname, normal, dlopen, resolution});
  };

  for (const Target& target : analysis.targets) {
    for (const fs::path& root : target.elf_objects) {
      auto graph = resolver.load(root, analysis.preloaded);
      if (!graph) {
        spdlog::warn("cannot follow the libraries of {}: {}", root.string(), graph.error().message);
        continue;
      }
      for (std::size_t i = 0; i < graph->objects.size(); ++i) {
        const elf::LoadedObject& object = graph->objects[i];
        if (object.reason == elf::LoadReason::main_program ||
            object.reason == elf::LoadReason::interpreter) {
          continue;
        }
        for (const elf::Resolution& need : object.needs) add_use(object.path, need, false);
        if (object.info == nullptr || object.info->soname.empty()) continue;
        for (const std::string& soname :
             dlopens_of(analysis, manifests, object.path, object.info->soname)) {
          add_use(object.path, resolver.resolve_dlopen(*graph, i, soname), true);
        }
      }
    }
  }
}

// A soname that a venv distribution should provide: one a RECORD lists (a ghost owner
// included), or one the manifests say a wheel of a target's CUDA major ships.
bool venv_should_provide(const Analysis& analysis, const manifest::Manifests& manifests,
                         const std::set<std::string>& record_sonames, const std::string& soname) {
  if (record_sonames.count(soname)) return true;
  return std::any_of(analysis.targets.begin(), analysis.targets.end(), [&](const Target& t) {
    return t.cuda_major != 0 && !manifests.providers_of(soname, t.cuda_major).empty();
  });
}

struct SonameGroup {
  std::set<std::string> needed_by;
  std::set<std::string> resolved_to;
};

}  // namespace

void check_loading(Analysis& analysis, const manifest::Manifests& manifests,
                   const elf::SystemView& system) {
  compute_preload(analysis, manifests);
  collect_uses(analysis, manifests, system);

  std::set<std::string> record_sonames;
  for (const dist::Distribution& dist : analysis.inventory.distributions) {
    for (const dist::RecordEntry& entry : dist.record) {
      if (looks_like_shared_object(entry.path)) {
        record_sonames.insert(fs::path(entry.path).filename().string());
      }
    }
  }

  std::set<fs::path> loaded;
  for (const Target& target : analysis.targets) {
    loaded.insert(target.elf_objects.begin(), target.elf_objects.end());
  }
  for (const fs::path& path : analysis.preloaded) loaded.insert(path.lexically_normal());

  std::map<std::string, SonameGroup> unresolved;
  std::map<std::string, SonameGroup> escaped;
  for (const SonameUse& use : analysis.uses) {
    std::string consumer = analysis.display_path(use.consumer);
    if (use.dlopen) consumer += " (dlopen)";
    if (!use.resolution.resolved()) {
      unresolved[use.soname].needed_by.insert(consumer);
      continue;
    }
    fs::path path = use.resolution.path->lexically_normal();
    if (is_inside(path, analysis.venv.root)) {
      loaded.insert(path);
      for (std::size_t owner : analysis.inventory.owners_of(path)) analysis.needed[owner] = true;
      continue;
    }
    if (manifests.system_provider(use.soname)) continue;
    if (!venv_should_provide(analysis, manifests, record_sonames, use.soname)) continue;
    SonameGroup& group = escaped[use.soname];
    group.needed_by.insert(consumer);
    group.resolved_to.insert(path.string());
  }

  // A distribution whose RECORD owns a soname the targets need is needed, even when its file
  // is gone (the ghost case).
  std::set<std::string> needed_sonames;
  for (const SonameUse& use : analysis.uses) needed_sonames.insert(use.soname);
  const auto& distributions = analysis.inventory.distributions;
  for (std::size_t i = 0; i < distributions.size(); ++i) {
    for (const dist::RecordEntry& entry : distributions[i].record) {
      if (needed_sonames.count(fs::path(entry.path).filename().string())) {
        analysis.needed[i] = true;
        break;
      }
    }
  }

  for (auto& [soname, group] : unresolved) {
    Finding finding;
    finding.kind = FindingKind::unresolved_soname;
    finding.soname = soname;
    finding.needed_by.assign(group.needed_by.begin(), group.needed_by.end());
    std::optional<manifest::Provider> provider = manifests.system_provider(soname);
    finding.severity = Severity::problem;
    std::string first = finding.needed_by.front();
    std::string more = finding.needed_by.size() > 1
                           ? fmt::format(" and {} more", finding.needed_by.size() - 1)
                           : std::string();
    finding.message =
        fmt::format("{} is needed by {}{} but the loader finds it nowhere", soname, first, more);
    if (provider == manifest::Provider::driver) {
      // Nothing in the venv can fix a host without the GPU driver: a note, not a finding.
      finding.note = "provided by the GPU driver, which this host lacks; never fetched";
      finding.message = fmt::format(
          "{} (needed by {}{}) is provided by the GPU driver, which "
          "this host lacks",
          soname, first, more);
      analysis.notes.push_back(std::move(finding));
      continue;
    }
    if (provider == manifest::Provider::system) {
      finding.note =
          "provided by the operating system; install it with the system's package manager";
    }
    analysis.findings.push_back(std::move(finding));
  }
  for (auto& [soname, group] : escaped) {
    Finding finding;
    finding.kind = FindingKind::escaped_soname;
    finding.severity = Severity::problem;
    finding.soname = soname;
    finding.needed_by.assign(group.needed_by.begin(), group.needed_by.end());
    finding.resolved_to = *group.resolved_to.begin();
    finding.message = fmt::format("{} should come from the venv but the loader takes {} for {}{}",
                                  soname, finding.resolved_to, finding.needed_by.front(),
                                  finding.needed_by.size() > 1
                                      ? fmt::format(" and {} more", finding.needed_by.size() - 1)
                                      : std::string());
    analysis.findings.push_back(std::move(finding));
  }
  analysis.loaded_libraries.assign(loaded.begin(), loaded.end());
}

}  // namespace venvfix::verify
