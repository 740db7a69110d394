#include <deque>
#include <map>
#include <set>

#include "steps.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/pep/requirement.hpp"
#include "venvfix/pep/version.hpp"

namespace venvfix::verify {

namespace {

struct Visit {
  std::size_t dist;
  std::set<std::string> extras;
};

}  // namespace

void check_requirements(Analysis& analysis, const manifest::Manifests& manifests) {
  const auto& distributions = analysis.inventory.distributions;
  std::deque<Visit> queue;
  // Which extras of each distribution were already followed.
  std::map<std::size_t, std::set<std::string>> followed;
  for (const Target& target : analysis.targets) {
    queue.push_back({target.dist, {}});
    followed[target.dist];
  }
  std::set<std::pair<std::string, std::string>> reported;  // (requirement, required_by)

  while (!queue.empty()) {
    Visit visit = std::move(queue.front());
    queue.pop_front();
    const dist::Distribution& from = distributions[visit.dist];
    for (const std::string& text : from.metadata.requires_dist) {
      auto requirement = pep::Requirement::parse(text);
      if (!requirement) continue;  // the inventory already reports unparsable metadata
      if (requirement->marker && !requirement->marker->evaluate(analysis.markers, visit.extras)) {
        continue;
      }
      const dist::Distribution* installed = analysis.inventory.find(requirement->name);
      bool satisfied = false;
      if (installed != nullptr) {
        auto version = pep::Version::parse(installed->version);
        satisfied = version && requirement->specifier.contains(*version, pep::PreReleases::allow);
      }
      if (!satisfied) {
        if (!reported.insert({text, from.normalized_name}).second) continue;
        Finding finding;
        bool native = manifests.find_distribution(requirement->name) != nullptr;
        finding.severity = native ? Severity::problem : Severity::warning;
        finding.dist = pep::normalize_name(requirement->name);
        finding.detail = UnmetRequirement{requirement->to_string(), from.normalized_name};
        // The message leaves the marker out: it was true, which is all the reader needs.
        std::string wanted = requirement->name;
        if (!requirement->extras.empty()) wanted += "[" + join(requirement->extras, ",") + "]";
        wanted += requirement->specifier.to_string();
        if (installed != nullptr) {
          finding.version = installed->version;
          finding.message = fmt::format("{} requires {}, but {} {} is installed", dist_label(from),
                                        wanted, installed->normalized_name, installed->version);
        } else {
          finding.message =
              fmt::format("{} requires {}, which is not installed", dist_label(from), wanted);
        }
        analysis.findings.push_back(std::move(finding));
        continue;
      }
      auto index = static_cast<std::size_t>(installed - distributions.data());
      analysis.needed[index] = true;
      auto [done, first_visit] = followed.try_emplace(index);
      std::set<std::string> extras(requirement->extras.begin(), requirement->extras.end());
      bool new_extras = false;
      for (const std::string& extra : extras) new_extras |= done->second.insert(extra).second;
      if (first_visit || new_extras) queue.push_back({index, std::move(extras)});
    }
  }
}

}  // namespace venvfix::verify
