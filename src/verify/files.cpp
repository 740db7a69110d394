#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "steps.hpp"
#include "venvfix/dist/file_check.hpp"
#include "venvfix/dist/hash_cache.hpp"

namespace venvfix::verify {

namespace {

// Python rewrites these at will and pip lists them: their absence breaks nothing.
bool is_bytecode(std::string_view record_path) {
  return record_path.ends_with(".pyc") &&
         record_path.find("__pycache__/") != std::string_view::npos;
}

std::string first_paths(const std::vector<std::string>& paths) {
  std::string out;
  std::size_t shown = std::min<std::size_t>(paths.size(), 2);
  for (std::size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + paths[i];
  if (paths.size() > shown) out += ", …";
  return out;
}

// True when `dist`'s RECORD row for the checked path agrees with the file on disk: same size,
// and the same sha256 when the file was hashed.
bool record_matches(const dist::Distribution& dist, const dist::FileCheck& check) {
  for (std::size_t e = 0; e < dist.record.size(); ++e) {
    if (dist.record_path_ids[e] != check.path_id) continue;
    const dist::RecordEntry& entry = dist.record[e];
    if (entry.size && *entry.size != check.actual_size) return false;
    if (check.actual_sha256 && entry.sha256 && *entry.sha256 != *check.actual_sha256) return false;
    return entry.size.has_value() || entry.sha256.has_value();
  }
  return false;
}

struct DistFiles {
  std::vector<std::string> missing;
  std::vector<std::string> mismatched;
  std::vector<std::string> clobbered;
  std::set<std::string> clobbered_by;
};

void add_ghost_and_clobbered(Analysis& analysis, std::map<std::size_t, DistFiles>& per_dist) {
  for (auto& [index, files] : per_dist) {
    const dist::Distribution& dist = analysis.inventory.distributions[index];
    Severity severity = analysis.needed[index] ? Severity::problem : Severity::warning;
    if (!files.missing.empty() || !files.mismatched.empty()) {
      std::sort(files.missing.begin(), files.missing.end());
      std::sort(files.mismatched.begin(), files.mismatched.end());
      Finding finding;
      finding.detail = GhostFiles{files.missing, files.mismatched};
      finding.severity = severity;
      finding.dist = dist.normalized_name;
      finding.version = dist.version;
      std::vector<std::string> parts;
      if (!files.missing.empty()) {
        parts.push_back(fmt::format("{} of its files {} missing ({})", files.missing.size(),
                                    files.missing.size() == 1 ? "is" : "are",
                                    first_paths(files.missing)));
      }
      if (!files.mismatched.empty()) {
        parts.push_back(fmt::format("{} differ{} from its RECORD ({})", files.mismatched.size(),
                                    files.mismatched.size() == 1 ? "s" : "",
                                    first_paths(files.mismatched)));
      }
      // "In name only": nothing it installed outside its own metadata is left.
      std::size_t payload = 0;
      for (const dist::RecordEntry& entry : dist.record) {
        fs::path path = (dist.site_packages / entry.path).lexically_normal();
        auto [end, ignored] = std::mismatch(dist.metadata_dir.begin(), dist.metadata_dir.end(),
                                            path.begin(), path.end());
        if (end != dist.metadata_dir.end() && !is_bytecode(entry.path)) ++payload;
      }
      bool name_only = files.mismatched.empty() && files.missing.size() == payload;
      finding.message =
          fmt::format("{} is installed{}: {}", dist_label(dist),
                      name_only ? " in name only" : " but damaged", join(parts, "; "));
      analysis.findings.push_back(std::move(finding));
    }
    if (!files.clobbered.empty()) {
      std::sort(files.clobbered.begin(), files.clobbered.end());
      Finding finding;
      const std::vector<std::string> by(files.clobbered_by.begin(), files.clobbered_by.end());
      finding.detail = ClobberedFiles{by};
      finding.severity = severity;
      finding.dist = dist.normalized_name;
      finding.version = dist.version;
      finding.paths = files.clobbered;
      finding.message = fmt::format("{} file{} of {} hold{} the bytes of {} ({})",
                                    files.clobbered.size(), files.clobbered.size() == 1 ? "" : "s",
                                    dist_label(dist), files.clobbered.size() == 1 ? "s" : "",
                                    join(by, ", "), first_paths(files.clobbered));
      analysis.findings.push_back(std::move(finding));
    }
  }
}

void add_shared_paths(Analysis& analysis) {
  const auto& distributions = analysis.inventory.distributions;
  struct Group {
    std::vector<std::size_t> owners;
    std::vector<std::string> paths;
    bool bytes_agree = true;
  };
  std::map<std::vector<std::size_t>, Group> groups;
  const dist::PathTable& paths = analysis.inventory.paths;
  for (dist::PathTable::Id path = 0; path < paths.size(); ++path) {
    std::span<const std::uint32_t> owners = analysis.inventory.owners_of(path);
    if (owners.size() < 2) continue;
    std::vector<std::size_t> key(owners.begin(), owners.end());
    std::string display = analysis.display_path(fs::path(paths[path]));
    if (is_bytecode(display)) continue;
    Group& group = groups[key];
    group.owners = key;
    group.paths.push_back(display);
    // Bytes agree when every owner's RECORD gives the same digest for the path.
    std::optional<Sha256Digest> first;
    for (std::size_t owner : key) {
      const dist::Distribution& dist = distributions[owner];
      for (std::size_t e = 0; e < dist.record.size(); ++e) {
        if (dist.record_path_ids[e] != path) continue;
        const dist::RecordEntry& entry = dist.record[e];
        if (!entry.sha256) {
          group.bytes_agree = false;
        } else if (!first) {
          first = entry.sha256;
        } else if (*first != *entry.sha256) {
          group.bytes_agree = false;
        }
      }
    }
  }
  for (auto& [key, group] : groups) {
    std::sort(group.paths.begin(), group.paths.end());
    bool needed =
        std::any_of(key.begin(), key.end(), [&](std::size_t i) { return analysis.needed[i]; });
    Finding finding;
    std::vector<std::string> owners;
    for (std::size_t owner : key) owners.push_back(distributions[owner].normalized_name);
    finding.severity = needed && !group.bytes_agree ? Severity::problem : Severity::warning;
    finding.paths = group.paths;
    finding.message = fmt::format(
        "{} path{} {} listed by {}{}: uninstalling one of them removes {} for the other{}",
        group.paths.size(), group.paths.size() == 1 ? "" : "s",
        group.paths.size() == 1 ? "is" : "are", join(owners, " and "),
        group.bytes_agree ? " with the same bytes" : " with different bytes",
        group.paths.size() == 1 ? "it" : "them", key.size() > 2 ? "s" : "");
    finding.detail = SharedPaths{std::move(owners)};
    analysis.findings.push_back(std::move(finding));
  }
}

}  // namespace

FileStatPass stat_record_files(const dist::Inventory& inventory, const env::Venv& venv,
                               const dist::KnownIdentity& known) {
  std::vector<dist::CheckRequest> requests;
  for (const dist::CheckRequest& request : dist::all_entries(inventory)) {
    const dist::Distribution& dist = inventory.distributions[request.dist];
    const std::string& path = dist.record[request.entry].path;
    if (!is_bytecode(path) && !dist_info_explains(dist, path)) requests.push_back(request);
  }
  const std::size_t asked = requests.size();
  dist::FileStats stats = dist::stat_files(inventory, std::move(requests), known);
  if (known) {
    spdlog::debug(
        "files: {} of {} stat'ed, the others as the comparison after the command found them",
        asked - dist::known_count(stats), asked);
  }
  return FileStatPass{std::move(stats), dist::HashCache::load_for(venv.state_dir())};
}

void check_files(Analysis& analysis, const Options& options, FileStatPass pass) {
  const dist::Inventory& inventory = analysis.inventory;
  std::unordered_set<std::string> always_hash;
  for (const fs::path& path : analysis.loaded_libraries) always_hash.insert(path.string());

  dist::HashCache& cache = pass.cache;
  dist::FileCheckReport report =
      dist::check_files(inventory, std::move(pass.stats),
                        options.hashes == HashCheck::everything ? dist::HashPolicy::full
                                                                : dist::HashPolicy::size_only,
                        always_hash, &cache);
  if (Status saved = cache.save(); !saved) {
    spdlog::debug("hash cache not saved: {}", saved.error().message);
  }
  spdlog::debug("checked {} files, hashed {} ({} bytes), {} from the hash cache",
                report.checks.size(), report.files_hashed, report.bytes_hashed, report.cache_hits);

  std::map<std::size_t, DistFiles> per_dist;
  for (const dist::FileCheck& check : report.checks) {
    if (check.state == dist::FileState::ok) continue;
    std::string display = analysis.display_path(fs::path(check.path));
    DistFiles& files = per_dist[check.dist];
    if (check.state == dist::FileState::missing) {
      files.missing.push_back(display);
      continue;
    }
    // Present but not what this RECORD says: whose bytes are they? Another owner whose RECORD
    // row for the same path matches what is on disk.
    std::set<std::string> content_owners;
    if (check.state == dist::FileState::size_mismatch ||
        check.state == dist::FileState::hash_mismatch) {
      for (std::size_t other : inventory.owners_of(check.path_id)) {
        if (other != check.dist && record_matches(inventory.distributions[other], check)) {
          content_owners.insert(inventory.distributions[other].normalized_name);
        }
      }
    }
    if (content_owners.empty()) {
      files.mismatched.push_back(display);
    } else {
      files.clobbered.push_back(display);
      files.clobbered_by.insert(content_owners.begin(), content_owners.end());
    }
  }
  add_ghost_and_clobbered(analysis, per_dist);
  add_shared_paths(analysis);
}

}  // namespace venvfix::verify
