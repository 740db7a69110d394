// The download cache's usage and pruning (include/venvfix/apply/cache_maintenance.hpp).
#include "venvfix/apply/cache_maintenance.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/fetch/cache_layout.hpp"
#include "venvfix/fetch/cache_lock.hpp"
#include "venvfix/txn/journal.hpp"
#include "venvfix/wheel/unpacked_cache.hpp"

namespace venvfix::apply {

namespace {

using Clock = std::chrono::system_clock;
using Inode = std::pair<std::uint64_t, std::uint64_t>;

namespace layout = fetch::cache_layout;

// Where the unpacked-wheel cache's writers keep their entries until complete.
fs::path unpacked_temporary_dir(const fs::path& root) {
  return wheel::UnpackedCache(root / layout::unpacked).temporary_dir();
}
// A temporary file or directory this old belongs to a writer that stopped.
constexpr auto k_stale_temporary = std::chrono::hours(1);

Clock::time_point modified(const struct stat& st) {
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

std::optional<struct stat> lstat_of(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

// Bytes on disk (allocated blocks, as du counts them): a streamed wheel's entry keeps a sparse
// skeleton of the archive (docs/wheel.md) whose size is the wheel's but whose blocks are few.
std::uint64_t disk_bytes(const struct stat& st) {
  return static_cast<std::uint64_t>(st.st_blocks) * 512;
}

// Calls `visit` for every regular file under `dir` (symlinks not followed).
template <typename Visit>
void for_each_file(const fs::path& dir, Visit&& visit) {
  std::error_code error;
  const auto options = fs::directory_options::skip_permission_denied;
  for (fs::recursive_directory_iterator it(dir, options, error), end; !error && it != end;
       it.increment(error)) {
    if (it->is_symlink(error) || !it->is_regular_file(error)) continue;
    if (auto st = lstat_of(it->path())) visit(it->path(), *st);
  }
}

// Children of `dir` (none when it cannot be read).
std::vector<fs::path> children(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    out.push_back(it->path());
  }
  return out;
}

// Every regular file of the cache by inode: its size, link count, and the links seen inside.
struct InodeUse {
  std::uint64_t size = 0;
  std::uint64_t links = 0;
  std::uint64_t links_inside = 0;
  std::size_t first_part = 0;
};

// What one item of a part is: each regular file under its directories, each of its directories
// (an unpacked wheel), or each entry directly in them (a temporary file or directory).
enum class ItemIs { file, directory, child };

// The parts of usage, each with the directories its files are in.
struct PartSpec {
  std::string name;
  fs::path path;
  std::vector<fs::path> dirs;
  ItemIs item = ItemIs::file;
};

std::vector<PartSpec> part_specs(const fs::path& root) {
  const fs::path unpacked = root / layout::unpacked;
  const fs::path unpacked_tmp = unpacked_temporary_dir(root);
  std::vector<fs::path> entries;
  for (const fs::path& child : children(unpacked)) {
    if (child != unpacked_tmp) entries.push_back(child);
  }
  return {{"wheels", root / layout::wheels, {root / layout::wheels}},
          {"unpacked", unpacked, entries, ItemIs::directory},
          {"pages", root / layout::pages, {root / layout::pages}},
          {"url-hashes", root / layout::urls, {root / layout::urls}},
          {"load-verdicts", root / layout::load_verdicts, {root / layout::load_verdicts}},
          {"temporary",
           root / layout::temporary,
           {root / layout::temporary, unpacked_tmp},
           ItemIs::child}};
}

// Its items, given how many regular files the walk of its directories found.
std::uint64_t count_items(const PartSpec& spec, std::uint64_t files) {
  if (spec.item == ItemIs::directory) return spec.dirs.size();
  if (spec.item == ItemIs::file) return files;
  std::uint64_t items = 0;
  for (const fs::path& dir : spec.dirs) items += children(dir).size();
  return items;
}

// ---- pruning --------------------------------------------------------------------------------

class Pruner {
 public:
  Pruner(const fs::path& root, const CachePruneOptions& options)
      : m_root(root), m_options(options), m_cutoff(Clock::now() - options.unused_for) {
    m_report.root = root;
    m_report.dry_run = options.dry_run;
    m_report.unused_for = options.unused_for;
  }

  Result<CachePruneReport> run() {
    VENVFIX_TRY(prune_temporaries());
    VENVFIX_TRY(prune_unpacked());
    VENVFIX_TRY(prune_wheels());
    for (const PrunedItem& item : m_report.removed) m_report.freed_bytes += item.freed_bytes;
    return std::move(m_report);
  }

 private:
  Status prune_temporaries() {
    const auto stale = Clock::now() - k_stale_temporary;
    std::vector<fs::path> candidates = children(m_root / layout::temporary);
    for (const fs::path& path : children(unpacked_temporary_dir(m_root)))
      candidates.push_back(path);
    for (const fs::path& path : children(m_root / layout::load_verdicts)) {
      if (path.filename().string().find(".json.tmp.") != std::string::npos) {
        candidates.push_back(path);
      }
    }
    for (const fs::path& path : candidates) {
      auto st = lstat_of(path);
      if (!st || modified(*st) >= stale) continue;
      VENVFIX_TRY(remove(PrunedItem{"temporary", path, freed_by(path), modified(*st)}, path));
    }
    return ok();
  }

  Status prune_unpacked() {
    for (const fs::path& entry : children(m_root / layout::unpacked)) {
      if (!is_sha256_hex(entry.filename().string())) continue;
      // An entry without an index was never renamed into place: its directory's time.
      auto st = lstat_of(entry / "index");
      if (!st) st = lstat_of(entry);
      if (!st || modified(*st) >= m_cutoff) continue;
      PrunedItem item{"unpacked", entry, freed_by(entry), modified(*st)};
      if (m_options.dry_run) {
        note_links_removed(entry);
        m_report.removed.push_back(std::move(item));
        continue;
      }
      // Another process may take it until it is renamed out of place.
      VENVFIX_TRY_ASSIGN(const std::optional<fs::path> out_of_place, move_out_of_place(entry));
      if (!out_of_place) continue;
      VENVFIX_TRY(remove(std::move(item), *out_of_place));
    }
    return ok();
  }

  // Renames `entry` into a new directory under unpacked/tmp (a crashed prune's is removed there
  // an hour later, as any writer's); that directory, or nullopt when the entry is gone already
  // (another prune, or a find that found it damaged).
  Result<std::optional<fs::path>> move_out_of_place(const fs::path& entry) {
    const fs::path tmp = unpacked_temporary_dir(m_root);
    std::error_code error;
    fs::create_directories(tmp, error);
    std::string pattern = (tmp / "prune.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      return make_error(ExitCode::error, "cannot create a directory in {}: {}", tmp.string(),
                        errno_message(errno));
    }
    const fs::path out_of_place(pattern);
    if (::rename(entry.c_str(), (out_of_place / entry.filename()).c_str()) != 0) {
      const int saved = errno;
      fs::remove(out_of_place, error);
      if (saved == ENOENT) return std::optional<fs::path>();
      return make_error(ExitCode::error, "cannot move {} out of the cache: {}", entry.string(),
                        errno_message(saved));
    }
    return std::optional<fs::path>(out_of_place);
  }

  Status prune_wheels() {
    std::vector<std::pair<fs::path, struct stat>> blobs;
    for_each_file(m_root / layout::wheels, [&](const fs::path& path, const struct stat& st) {
      blobs.emplace_back(path, st);
    });
    for (const auto& [path, st] : blobs) {
      if (!is_sha256_hex(path.filename().string()) || modified(st) >= m_cutoff) continue;
      // Linked by an entry that stays (its wheel.whl): kept with it. (A dry run counts the links
      // of the entries it would have removed; a real prune's stat already shows them gone.)
      const auto removed = m_links_removed.find({st.st_dev, st.st_ino});
      const std::uint64_t gone = removed == m_links_removed.end() ? 0 : removed->second;
      if (st.st_nlink > 1 + gone) continue;
      VENVFIX_TRY(remove(PrunedItem{"wheel", path, disk_bytes(st), modified(st)}, path));
    }
    return ok();
  }

  // The bytes removing `path` frees: its files that have no other link.
  static std::uint64_t freed_by(const fs::path& path) {
    std::uint64_t bytes = 0;
    auto count = [&](const struct stat& st) {
      if (st.st_nlink <= 1) bytes += disk_bytes(st);
    };
    auto st = lstat_of(path);
    if (st && S_ISREG(st->st_mode)) {
      count(*st);
    } else {
      for_each_file(path, [&](const fs::path&, const struct stat& file) { count(file); });
    }
    return bytes;
  }

  void note_links_removed(const fs::path& entry) {
    for_each_file(entry, [&](const fs::path&, const struct stat& st) {
      ++m_links_removed[{st.st_dev, st.st_ino}];
    });
  }

  Status remove(PrunedItem item, const fs::path& path) {
    if (!m_options.dry_run) {
      std::error_code error;
      fs::remove_all(path, error);
      if (error) {
        return make_error(ExitCode::error, "cannot remove {} from the cache: {}", path.string(),
                          error.message());
      }
      spdlog::debug("cache prune: removed {} ({} bytes freed)", item.path.string(),
                    item.freed_bytes);
    }
    m_report.removed.push_back(std::move(item));
    return ok();
  }

  const fs::path& m_root;
  const CachePruneOptions& m_options;
  const Clock::time_point m_cutoff;
  std::map<Inode, std::uint64_t> m_links_removed;  // by the entries a dry run would remove
  CachePruneReport m_report;
};

}  // namespace

CacheUsage cache_usage(const fs::path& root) {
  CacheUsage usage;
  usage.root = root;
  const std::vector<PartSpec> specs = part_specs(root);
  std::map<Inode, InodeUse> inodes;
  std::vector<std::uint64_t> files(specs.size(), 0);  // regular files walked, per part
  for (std::size_t part = 0; part < specs.size(); ++part) {
    for (const fs::path& dir : specs[part].dirs) {
      for_each_file(dir, [&](const fs::path&, const struct stat& st) {
        ++files[part];
        auto [it, added] = inodes.try_emplace({st.st_dev, st.st_ino});
        if (added) {
          it->second = {disk_bytes(st), static_cast<std::uint64_t>(st.st_nlink), 0, part};
        }
        ++it->second.links_inside;
      });
    }
  }
  for (std::size_t part = 0; part < specs.size(); ++part) {
    usage.parts.push_back(
        {specs[part].name, specs[part].path, count_items(specs[part], files[part]), 0, 0});
  }
  for (const auto& [inode, use] : inodes) {
    CachePartUsage& part = usage.parts[use.first_part];
    part.bytes += use.size;
    if (use.links_inside >= use.links) part.cache_only_bytes += use.size;
  }
  return usage;
}

Result<CachePruneReport> prune_cache(const fs::path& root, const CachePruneOptions& options) {
  std::optional<fetch::CacheLock> lock;
  std::error_code error;
  if (!options.dry_run && fs::is_directory(root, error)) {
    const auto wait = options.wait ? fetch::CacheLock::Wait::wait : fetch::CacheLock::Wait::fail;
    VENVFIX_TRY_ASSIGN(
        lock, fetch::CacheLock::acquire(root, fetch::CacheLock::Mode::exclusive, wait, [&] {
          spdlog::info("waiting for the venvfix processes using {} to finish", root.string());
        }));
  }
  return Pruner(root, options).run();
}

nlohmann::json cache_usage_json(const CacheUsage& usage) {
  nlohmann::json parts = nlohmann::json::array();
  std::uint64_t bytes = 0;
  std::uint64_t cache_only = 0;
  for (const CachePartUsage& part : usage.parts) {
    parts.push_back({{"name", part.name},
                     {"path", part.path.string()},
                     {"items", part.items},
                     {"bytes", part.bytes},
                     {"cache_only_bytes", part.cache_only_bytes}});
    bytes += part.bytes;
    cache_only += part.cache_only_bytes;
  }
  return {{"schema", "venvfix-cache/1"},
          {"root", usage.root.string()},
          {"parts", std::move(parts)},
          {"bytes", bytes},
          {"cache_only_bytes", cache_only}};
}

nlohmann::json prune_report_json(const CachePruneReport& report) {
  nlohmann::json removed = nlohmann::json::array();
  for (const PrunedItem& item : report.removed) {
    removed.push_back({{"kind", item.kind},
                       {"path", item.path.string()},
                       {"freed_bytes", item.freed_bytes},
                       {"last_used", txn::utc_iso8601(item.last_used)}});
  }
  return {{"schema", "venvfix-cache-prune/1"}, {"root", report.root.string()},
          {"dry_run", report.dry_run},         {"unused_for_seconds", report.unused_for.count()},
          {"removed", std::move(removed)},     {"freed_bytes", report.freed_bytes}};
}

void print_cache_usage(const CacheUsage& usage, std::ostream& out) {
  out << fmt::format("cache: {}\n", usage.root.string());
  std::uint64_t bytes = 0;
  std::uint64_t cache_only = 0;
  for (const CachePartUsage& part : usage.parts) {
    out << fmt::format("  {:<14} {:>7} items {:>10}  ({} only in the cache)\n", part.name,
                       part.items, human_size(part.bytes), human_size(part.cache_only_bytes));
    bytes += part.bytes;
    cache_only += part.cache_only_bytes;
  }
  out << fmt::format("  {:<14} {:>7}       {:>10}  ({} only in the cache)\n", "total", "",
                     human_size(bytes), human_size(cache_only));
}

void print_prune_report(const CachePruneReport& report, std::ostream& out) {
  const char* verb = report.dry_run ? "would remove" : "removed";
  for (const PrunedItem& item : report.removed) {
    out << fmt::format("{} {} {} (last used {}; {} freed)\n", verb, item.kind, item.path.string(),
                       txn::utc_iso8601(item.last_used), human_size(item.freed_bytes));
  }
  out << fmt::format("{} {} item(s) from {}: {} {}\n", report.dry_run ? "would prune" : "pruned",
                     report.removed.size(), report.root.string(), human_size(report.freed_bytes),
                     report.dry_run ? "would be freed" : "freed");
}

}  // namespace venvfix::apply
