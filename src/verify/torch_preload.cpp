#include "venvfix/verify/torch_preload.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <optional>

#include "venvfix/base/strings.hpp"
#include "venvfix/pep/version.hpp"

namespace venvfix::verify {

namespace {

bool is_torch_cuda(const Analysis& analysis, const Target& target) {
  return target.cuda_major != 0 &&
         analysis.inventory.distributions[target.dist].normalized_name == "torch";
}

// The first file matching `glob` in the preload's search order, if any.
std::optional<fs::path> find_preload(const Analysis& analysis, const Target& target,
                                     const manifest::TorchPreload& preload,
                                     const manifest::PreloadLibrary& library,
                                     const std::string& glob, const DirectoryListing& listing) {
  for (const fs::path& site : analysis.venv.site_packages) {
    for (const std::string& pattern : preload.search) {
      fs::path dir = site / replace_all(replace_all(pattern, "{folder}", library.folder),
                                        "{cuda_major}", std::to_string(target.cuda_major));
      for (const std::string& name : listing(dir)) {
        if (::fnmatch(glob.c_str(), name.c_str(), 0) == 0) return dir / name;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<fs::path> torch_preload_files(const Analysis& analysis, const Target& target,
                                          const manifest::Manifests& manifests,
                                          const DirectoryListing& listing,
                                          const manifest::PreloadWay& way,
                                          std::span<const std::string> exclude) {
  std::vector<fs::path> out;
  if (!is_torch_cuda(analysis, target)) return out;
  const manifest::TorchPreload& preload = manifests.torch_preload();
  auto named = [](std::span<const std::string> list, const std::string& folder) {
    return std::find(list.begin(), list.end(), folder) != list.end();
  };
  for (const manifest::PreloadLibrary& library : preload.libraries) {
    if (!way.whole_table && !named(way.folders, library.folder)) continue;
    if (named(exclude, library.folder)) continue;
    for (const std::string& glob : library.globs) {
      std::optional<fs::path> hit = find_preload(analysis, target, preload, library, glob, listing);
      if (hit && std::find(out.begin(), out.end(), *hit) == out.end()) out.push_back(*hit);
    }
  }
  return out;
}

std::vector<fs::path> torch_preloads(const Analysis& analysis, const manifest::Manifests& manifests,
                                     const DirectoryListing& listing) {
  std::vector<fs::path> out;
  manifest::PreloadWay whole;
  whole.whole_table = true;
  for (const Target& target : analysis.targets) {
    for (fs::path& file : torch_preload_files(analysis, target, manifests, listing, whole)) {
      if (std::find(out.begin(), out.end(), file) == out.end()) out.push_back(std::move(file));
    }
  }
  return out;
}

PreloadChoice preload_choice(const Analysis& analysis, const Target& target,
                             const manifest::Manifests& manifests) {
  const manifest::TorchPreload& preload = manifests.torch_preload();
  const std::string& version = analysis.inventory.distributions[target.dist].version;
  PreloadChoice choice;
  const manifest::TorchBuild* build = preload.find_build(version);
  if (build != nullptr) choice.exclude = build->exclude;
  if (build != nullptr && build->on_success) {
    choice.on_success = {*build->on_success};
    choice.basis = fmt::format("manifests/torch.json lists torch {}", version);
    return choice;
  }
  auto parsed = pep::Version::parse(version);
  auto public_version = parsed ? pep::Version::parse(parsed->public_version()) : parsed;
  const manifest::PreloadRule* rule = public_version ? preload.rule_for(*public_version) : nullptr;
  if (rule != nullptr) {
    choice.on_success = rule->on_success;
    choice.exclude.insert(choice.exclude.end(), rule->exclude.begin(), rule->exclude.end());
    choice.basis = fmt::format("manifests/torch.json does not list torch {}; its rule for torch {}",
                               version, rule->torch);
    return choice;
  }
  manifest::PreloadWay whole;
  whole.whole_table = true;
  choice.on_success = {manifest::PreloadWay{}, whole};
  choice.basis = fmt::format("no rule of manifests/torch.json covers torch {}", version);
  return choice;
}

std::string describe(const manifest::PreloadWay& way) {
  if (way.whole_table) return "the whole table";
  if (way.folders.empty()) return "nothing";
  return join(way.folders, ", ");
}

}  // namespace venvfix::verify
