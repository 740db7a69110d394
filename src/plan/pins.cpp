// Rule 1: the targets' own Requires-Dist. torch 2.11+ pins its CUDA toolkit wheels through a
// meta-package (`cuda-toolkit[cublas,cudart,…]==13.0.2`), whose own metadata pins each
// component for each extra (`nvidia-cublas==13.1.0.3.*; extra == "cublas"`): those component
// pins are the target's pins too.
#include <set>

#include "internal.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/pep/version.hpp"

namespace venvfix::plan::detail {

namespace {

// How deep meta-packages may nest (cuda-toolkit has none; a bound keeps a cycle finite).
constexpr int k_max_meta_depth = 4;

std::string requirement_text(const pep::Requirement& requirement) {
  std::string text = requirement.name;
  if (!requirement.extras.empty()) text += "[" + join(requirement.extras, ",") + "]";
  return text + requirement.specifier.to_string();
}

bool is_meta(const manifest::Manifests& manifests, const std::string& name) {
  const manifest::Distribution* known = manifests.find_distribution(name);
  return known != nullptr && known->meta;
}

// The meta-package's Requires-Dist: installed when its version satisfies the requirement,
// else from the index (PEP 658 metadata, else the wheel).
Result<std::vector<std::string>> meta_requirements(const verify::Analysis& analysis,
                                                   const pep::Requirement& requirement,
                                                   IndexView& index) {
  if (const dist::Distribution* installed = analysis.inventory.find(requirement.name)) {
    auto version = pep::Version::parse(installed->version);
    if (version && requirement.specifier.contains(*version, pep::PreReleases::allow) &&
        !installed->metadata.name.empty()) {
      return installed->metadata.requires_dist;
    }
  }
  VENVFIX_TRY_ASSIGN(index::Candidate candidate,
                     index.select(requirement.name, requirement.specifier));
  VENVFIX_TRY_ASSIGN(dist::CoreMetadata metadata, index.metadata(candidate));
  return metadata.requires_dist;
}

struct Walker {
  const verify::Analysis& analysis;
  const manifest::Manifests& manifests;
  IndexView& index;
  Pins pins;

  Status add(const std::vector<std::string>& lines, const std::set<std::string>& extras,
             const std::string& target, const std::string& via, int depth) {
    for (const std::string& line : lines) {
      auto requirement = pep::Requirement::parse(line);
      if (!requirement) continue;  // doctor reports unparsable metadata
      if (!requirement->url.empty()) continue;
      if (requirement->marker && !requirement->marker->evaluate(analysis.markers, extras)) {
        continue;
      }
      std::string name = pep::normalize_name(requirement->name);
      Pin pin{name, requirement->specifier, requirement_text(*requirement), target, via};
      auto& list = pins[name];
      bool duplicate = false;
      for (const Pin& existing : list) {
        duplicate |= existing.requirement == pin.requirement && existing.via == pin.via;
      }
      if (!duplicate) list.push_back(std::move(pin));
      if (!requirement->extras.empty() && is_meta(manifests, name) && depth < k_max_meta_depth) {
        VENVFIX_TRY_ASSIGN(std::vector<std::string> inner,
                           meta_requirements(analysis, *requirement, index));
        std::set<std::string> inner_extras(requirement->extras.begin(), requirement->extras.end());
        VENVFIX_TRY(add(inner, inner_extras, target, requirement_text(*requirement), depth + 1));
      }
    }
    return ok();
  }
};

}  // namespace

Result<Pins> collect_pins(const verify::Analysis& analysis, const manifest::Manifests& manifests,
                          IndexView& index) {
  Walker walker{analysis, manifests, index, {}};
  for (const verify::Target& target : analysis.targets) {
    const dist::Distribution& dist = analysis.inventory.distributions[target.dist];
    VENVFIX_TRY(walker.add(dist.metadata.requires_dist, {}, dist.normalized_name, "", 0));
  }
  return std::move(walker.pins);
}

}  // namespace venvfix::plan::detail
