// A plan changes only the environment's own layer (internal.hpp, docs/plan.md).
#include <algorithm>

#include "internal.hpp"

namespace venvfix::plan::detail {

namespace {

const dist::Distribution* installed_version(const Context& context, const std::string& name,
                                            const std::string& version) {
  for (const dist::Distribution& dist : context.analysis.inventory.distributions) {
    if (dist.normalized_name == name && dist.version == version) return &dist;
  }
  return nullptr;
}

ProtectedLayer protected_entry(const Context& context, const dist::Distribution& dist,
                               const std::string& layer, std::string_view what) {
  std::string where =
      layer == "base"
          ? fmt::format(
                "it is in the base prefix {}, which a plan for the venv never changes (a "
                "copy in the venv does not repair a target in the base: repair the base "
                "with `venvfix --venv {}`)",
                context.analysis.venv.base_prefix.string(),
                context.analysis.venv.base_prefix.string())
          : std::string("the system package manager owns it (no pip or uv INSTALLER)");
  return ProtectedLayer{dist.normalized_name, dist.version, layer,
                        fmt::format("{} {} would be {}, but {}; change it with the tool that owns "
                                    "it",
                                    dist.normalized_name, dist.version, what, where)};
}

// A copy in the venv repairs what the venv's own objects load; a target in the base finds its
// libraries through its $ORIGIN RPATH in the base only, so there it does not.
bool a_target_is_in_the_base(const Context& context) {
  const verify::Analysis& analysis = context.analysis;
  return std::any_of(analysis.targets.begin(), analysis.targets.end(), [&](const auto& target) {
    const dist::Distribution& dist = analysis.inventory.distributions[target.dist];
    return analysis.venv.layer_of(dist.site_packages) == env::Layer::base;
  });
}

}  // namespace

void keep_to_own_layer(const Context& context, Plan& plan) {
  const env::Venv& venv = context.analysis.venv;
  std::vector<Action> kept;
  for (Action& action : plan.actions) {
    auto* remove = std::get_if<Remove>(&action);
    auto* install = std::get_if<Install>(&action);
    const dist::Distribution* touched = nullptr;
    if (remove != nullptr) {
      touched = installed_version(context, remove->dist, remove->version);
    } else if (install->replaces) {
      touched = installed_version(context, install->replaces->dist, install->replaces->version);
    }
    const std::string layer = touched ? verify::layer_label(venv, *touched) : std::string();
    if (layer.empty()) {
      kept.push_back(std::move(action));
    } else if (layer == "base" && install != nullptr && !a_target_is_in_the_base(context)) {
      install->replaces.reset();
      install->reason += fmt::format(
          "; installed into the venv, where it shadows the copy in the base prefix {} (left as "
          "it is)",
          venv.base_prefix.string());
      kept.push_back(std::move(action));
    } else {
      plan.unresolved.emplace_back(
          protected_entry(context, *touched, layer,
                          remove != nullptr ? "removed" : "replaced by " + install->version));
    }
  }
  plan.actions = std::move(kept);
}

}  // namespace venvfix::plan::detail
