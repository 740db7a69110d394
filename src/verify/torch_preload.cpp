#include "venvfix/verify/torch_preload.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <optional>

#include "venvfix/base/strings.hpp"

namespace venvfix::verify {

std::vector<fs::path> torch_preloads(const Analysis& analysis, const manifest::Manifests& manifests,
                                     const DirectoryListing& listing) {
  std::vector<fs::path> out;
  const manifest::TorchPreload& preload = manifests.torch_preload();
  for (const Target& target : analysis.targets) {
    if (analysis.inventory.distributions[target.dist].normalized_name != "torch") continue;
    if (target.cuda_major == 0) continue;
    for (const manifest::PreloadLibrary& library : preload.libraries) {
      for (const std::string& glob : library.globs) {
        std::optional<fs::path> hit;
        for (const fs::path& site : analysis.venv.site_packages) {
          for (const std::string& pattern : preload.search) {
            fs::path dir = site / replace_all(replace_all(pattern, "{folder}", library.folder),
                                              "{cuda_major}", std::to_string(target.cuda_major));
            for (const std::string& name : listing(dir)) {
              if (::fnmatch(glob.c_str(), name.c_str(), 0) == 0) {
                hit = dir / name;
                break;
              }
            }
            if (hit) break;
          }
          if (hit) break;
        }
        if (hit && std::find(out.begin(), out.end(), *hit) == out.end()) out.push_back(*hit);
      }
    }
  }
  return out;
}

}  // namespace venvfix::verify
