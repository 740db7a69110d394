// Removals: a conflicting foreign-CUDA distribution (one that shares paths with, or overwrote
// files of, a distribution the target needs) when nothing that stays requires it; with
// --remove-foreign-cuda the other foreign ones too; with --uninstall the named ones. A removal
// keeps every path a remaining distribution also owns, and the remaining owner is reinstalled
// when the file there does not hold its bytes.
#include <algorithm>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "internal.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/dist/file_check.hpp"
#include "venvfix/dist/hash_cache.hpp"
#include "venvfix/pep/name.hpp"

namespace venvfix::plan::detail {

namespace {

using verify::Finding;
using verify::FindingKind;

struct Candidate {
  std::size_t dist;
  const Finding* finding;  // the cuda-mix finding
};

// Installed distributions that stay (not in `leaving`) and require `name` (markers true).
std::vector<std::string> requirers(const Context& context, const std::string& name,
                                   const std::set<std::size_t>& leaving) {
  std::vector<std::string> out;
  for (const auto& [requirement, by] : context.requirements_on(name, leaving)) out.push_back(by);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The removals --uninstall asks for, as asked.
void plan_asked_removals(const Context& context, Draft& draft) {
  for (std::size_t index : context.uninstall) {
    const dist::Distribution& dist = context.analysis.inventory.distributions[index];
    draft.removals.push_back(
        {index, "uninstall",
         fmt::format("uninstalls {} {} as asked", dist.normalized_name, dist.version), false});
  }
}

// The cuda-mix findings whose distribution may go; those `dropped` (removing them would leave
// a target soname unresolved) stay, with a note, or unresolved when they conflict.
std::vector<Candidate> removal_candidates(const Context& context,
                                          const std::set<std::size_t>& dropped, Draft& draft) {
  const auto& distributions = context.analysis.inventory.distributions;
  std::vector<Candidate> candidates;
  std::set<std::size_t> seen;
  for (const Finding& finding : context.analysis.findings) {
    const auto* mix = finding.as<verify::CudaMix>();
    if (mix == nullptr || (!mix->conflicts && !context.options.remove_foreign_cuda)) continue;
    const dist::Distribution* dist = context.analysis.inventory.find(finding.dist);
    if (dist == nullptr) continue;
    auto index = static_cast<std::size_t>(dist - distributions.data());
    // One cuda-mix finding per CUDA target: the first one decides.
    if (!seen.insert(index).second) continue;
    if (!dropped.count(index)) {
      candidates.push_back({index, &finding});
      continue;
    }
    draft.notes.push_back({fmt::format("{} {} stays: removing it would leave a target soname "
                                       "unresolved",
                                       finding.dist, finding.version),
                           KeptForeignCuda{finding.dist}});
    if (mix->conflicts) {
      draft.add_unresolved(
          "cuda-mix " + finding.dist,
          KeptCudaMix{finding.dist,
                      {},
                      finding.message + "; it cannot be removed without breaking a target"});
    }
  }
  return candidates;
}

// A candidate required by a distribution that stays cannot go; that may keep another
// candidate it requires, so repeat until nothing changes. Returns candidate → its requirers.
std::map<std::size_t, std::vector<std::string>> blocked_candidates(
    const Context& context, const std::vector<Candidate>& candidates) {
  const auto& distributions = context.analysis.inventory.distributions;
  std::set<std::size_t> leaving;
  for (const Candidate& candidate : candidates) leaving.insert(candidate.dist);
  std::map<std::size_t, std::vector<std::string>> blocked;
  for (bool changed = true; changed;) {
    changed = false;
    for (const Candidate& candidate : candidates) {
      if (!leaving.count(candidate.dist)) continue;
      std::vector<std::string> by =
          requirers(context, distributions[candidate.dist].normalized_name, leaving);
      if (by.empty()) continue;
      leaving.erase(candidate.dist);
      blocked[candidate.dist] = std::move(by);
      changed = true;
    }
  }
  return blocked;
}

void keep_required(const Finding& finding, const std::vector<std::string>& by, Draft& draft) {
  const char* verb_ending = by.size() == 1 ? "s" : "";
  if (!finding.as<verify::CudaMix>()->conflicts) {
    draft.notes.push_back({fmt::format("{} {} stays: {} require{} it", finding.dist,
                                       finding.version, join(by, ", "), verb_ending),
                           KeptForeignCuda{finding.dist}});
    return;
  }
  draft.add_unresolved("cuda-mix " + finding.dist,
                       KeptCudaMix{finding.dist, by,
                                   fmt::format("{}; it cannot be removed while {} require{} it",
                                               finding.message, join(by, ", "), verb_ending)});
}

std::string removal_reason(const Finding& finding) {
  const verify::CudaMix& mix = *finding.as<verify::CudaMix>();
  if (mix.conflicts) {
    return fmt::format(
        "removes {} {}, a CUDA {} distribution that shares or overwrote files of {} (the "
        "target is built for CUDA {})",
        finding.dist, finding.version, mix.cuda_major, join(mix.dists, ", "),
        mix.target_cuda_major);
  }
  return fmt::format(
      "removes {} {}, a CUDA {} distribution beside a target built for CUDA {} "
      "(--remove-foreign-cuda)",
      finding.dist, finding.version, mix.cuda_major, mix.target_cuda_major);
}

}  // namespace

Status plan_removals(const Context& context, const std::set<std::size_t>& dropped, Draft& draft) {
  if (!context.uninstall.empty()) {
    plan_asked_removals(context, draft);
    return ok();
  }
  const std::vector<Candidate> candidates = removal_candidates(context, dropped, draft);
  const auto blocked = blocked_candidates(context, candidates);
  for (const Candidate& candidate : candidates) {
    const Finding& finding = *candidate.finding;
    if (auto it = blocked.find(candidate.dist); it != blocked.end()) {
      keep_required(finding, it->second, draft);
      continue;
    }
    draft.removals.push_back(
        {candidate.dist,
         finding.as<verify::CudaMix>()->conflicts ? "conflicting-cuda" : "foreign-cuda",
         removal_reason(finding), true});
  }
  return ok();
}

Keep keep_for(const Context& context, std::size_t index, const std::set<std::size_t>& leaving) {
  const dist::Inventory& inventory = context.analysis.inventory;
  const dist::Distribution& removed = inventory.distributions[index];
  Keep keep;
  std::vector<dist::CheckRequest> requests;
  std::vector<std::string> request_paths;  // relative to the removed distribution, per request
  std::map<std::size_t, std::unordered_map<std::string, std::size_t>> rows;  // owner -> path -> row
  for (const dist::RecordEntry& entry : removed.record) {
    std::string path = dist::resolve_record_path(removed.site_packages, entry.path);
    std::vector<std::size_t> staying;
    for (std::size_t owner : inventory.owners_of(path)) {
      if (owner != index && !leaving.count(owner)) staying.push_back(owner);
    }
    if (staying.empty()) {
      keep.removed.emplace_back(path);
      continue;
    }
    keep.keep.push_back(entry.path);
    for (std::size_t owner : staying) {
      auto [it, fresh] = rows.try_emplace(owner);
      if (fresh) {
        const dist::Distribution& other = inventory.distributions[owner];
        for (std::size_t row = 0; row < other.record.size(); ++row) {
          it->second.emplace(dist::resolve_record_path(other.site_packages, other.record[row].path),
                             row);
        }
      }
      if (auto row = it->second.find(path); row != it->second.end()) {
        requests.push_back({owner, row->second});
        request_paths.push_back(entry.path);
      }
    }
  }
  std::sort(keep.keep.begin(), keep.keep.end());
  keep.keep.erase(std::unique(keep.keep.begin(), keep.keep.end()), keep.keep.end());
  if (requests.empty()) return keep;
  // A kept file must hold the remaining owner's bytes: hash it (the hash cache answers files
  // doctor already hashed, so this reads only what changed).
  dist::HashCache cache = dist::HashCache::load_for(context.analysis.venv.state_dir());
  dist::FileCheckReport report =
      dist::check_files(inventory, requests, dist::HashPolicy::full, {}, &cache);
  if (Status saved = cache.save(); !saved) {
    spdlog::debug("hash cache not saved: {}", saved.error().message);
  }
  for (std::size_t i = 0; i < report.checks.size(); ++i) {
    if (report.checks[i].state == dist::FileState::ok) continue;
    keep.damaged_owners[report.checks[i].dist].push_back(request_paths[i]);
  }
  return keep;
}

}  // namespace venvfix::plan::detail
