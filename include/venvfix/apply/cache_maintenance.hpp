// What the download cache (--cache-dir) holds, and pruning it. The unpacked-wheel cache keeps
// every wheel an apply unpacked (NVIDIA's libraries: gigabytes), and nothing else removes it.
//
// Last use: an unpacked entry's is its index file's mtime, which UnpackedCache::find refreshes
// whenever an install takes the entry (the index is venvfix's own file, never linked into a
// venv). A downloaded wheel's (a blob's) is when it was downloaded: its mtime is part of the
// identity an unpacked entry records for its hard link to it, so it is never refreshed; a blob
// that an entry links is kept while the entry is.
//
// What removing frees: the blocks of a file whose every link is inside the cache (sizes are
// bytes on disk, as du counts them: a streamed wheel's entry holds a sparse skeleton). A venv
// installed with hard links from the unpacked cache (apply's default) shares its files' inodes with
// the entry, so removing the entry frees nothing of those until the venv lets them go.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "venvfix/base/result.hpp"

namespace venvfix::apply {

namespace fs = std::filesystem;

struct CachePartUsage {
  std::string name;  // "wheels", "unpacked", "pages", "load-verdicts", "temporary"
  fs::path path;
  std::uint64_t items = 0;  // blobs, entries, pages, verdicts, temporary files and directories
  // Bytes on disk (allocated blocks) of its regular files, each inode once (the first part
  // that links it counts it).
  std::uint64_t bytes = 0;
  // Of those, in files whose every link is inside the cache: what removing them frees.
  std::uint64_t cache_only_bytes = 0;
};

struct CacheUsage {
  fs::path root;
  std::vector<CachePartUsage> parts;  // in the order above; a part that does not exist is zero
};

// Reads the cache under `root` (which need not exist). Never fails: what cannot be read is
// left out.
CacheUsage cache_usage(const fs::path& root);

struct CachePruneOptions {
  // What was not used for this long goes (zero: everything not in use at this moment).
  std::chrono::seconds unused_for = std::chrono::hours(24 * 30);
  bool dry_run = false;  // report what would go; remove nothing
  // While other venvfix processes use the cache (they hold its lock shared, fetch/cache_lock.hpp):
  // wait for them, or fail with ExitCode::locked naming the cache.
  bool wait = false;
};

struct PrunedItem {
  std::string kind;  // "unpacked", "wheel", "temporary"
  fs::path path;
  std::uint64_t freed_bytes = 0;
  std::chrono::system_clock::time_point last_used;
};

struct CachePruneReport {
  fs::path root;
  bool dry_run = false;
  std::chrono::seconds unused_for{0};
  std::vector<PrunedItem> removed;
  std::uint64_t freed_bytes = 0;
};

// Removes, under `root`: temporary files and directories of writers that stopped (an hour old);
// unpacked-wheel entries not used for `unused_for`; downloaded wheels as old that no entry links.
// Holds the cache's lock exclusively (a dry run takes none), so no apply, plan or fetch is using
// what it removes. An entry is renamed out of place before its files are removed, so that a prune
// killed half way leaves no half entry. Errors: ExitCode::locked (the cache in use, no `wait`);
// exit 1, a file the cache holds cannot be removed.
Result<CachePruneReport> prune_cache(const fs::path& root, const CachePruneOptions& options);

nlohmann::json cache_usage_json(const CacheUsage& usage);          // venvfix-cache/1
nlohmann::json prune_report_json(const CachePruneReport& report);  // venvfix-cache-prune/1
void print_cache_usage(const CacheUsage& usage, std::ostream& out);
void print_prune_report(const CachePruneReport& report, std::ostream& out);

}  // namespace venvfix::apply
