// Checking installed files against their RECORD: present, regular, right size, right hash.
// This is where ghost files (missing, size or hash mismatch) and clobbered files are seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "venvfix/base/sha256.hpp"
#include "venvfix/dist/hash_cache.hpp"
#include "venvfix/dist/inventory.hpp"

namespace venvfix::dist {

enum class FileState { ok, missing, size_mismatch, hash_mismatch, not_regular, unreadable };

// "ok", "missing", "size-mismatch", "hash-mismatch", "not-regular", "unreadable".
std::string_view to_string(FileState state);

// One checked RECORD row. The views point into the Inventory that was checked: they stay valid
// while it lives unchanged.
struct FileCheck {
  std::size_t dist = 0;          // index into Inventory::distributions
  std::size_t entry = 0;         // index into that distribution's record
  std::string_view record_path;  // as written in RECORD
  std::string_view path;         // absolute, lexically normalised: Inventory::paths[path_id]
  PathTable::Id path_id = 0;
  FileState state = FileState::ok;
  // Set when the file was hashed or its hash came from the cache.
  std::optional<Sha256Digest> actual_sha256;
  std::uint64_t actual_size = 0;  // 0 when missing
};

enum class HashPolicy { size_only, full };

// One RECORD row to check: Inventory::distributions[dist].record[entry].
struct CheckRequest {
  std::size_t dist = 0;
  std::size_t entry = 0;
};

struct FileCheckReport {
  std::vector<FileCheck> checks;  // one per request, in request order
  std::size_t files_hashed = 0;   // files whose bytes were read
  std::uint64_t bytes_hashed = 0;
  std::size_t cache_hits = 0;  // hashes answered by the HashCache without reading
};

// Every row of every distribution's RECORD, in inventory order.
std::vector<CheckRequest> all_entries(const Inventory& inventory);

// Checks each requested file (stat follows symlinks, as pip and the loader do):
// - missing (no such file, or a dangling symlink), not_regular, unreadable (stat or read
//   failed for another reason), size_mismatch (RECORD has a size and it differs);
// - hash_mismatch when the file is hashed and its SHA-256 differs from RECORD's. A file is
//   hashed when RECORD gives a sha256 and `policy` is full or its absolute path is in
//   `always_hash` (the libraries a target loads). Rows with another algorithm (sha384, ...)
//   are checked by size only.
// A file listed several times (a path two RECORDs share) is read once. Stats and hashes run on
// every core; `cache` (may be null) answers hashes by file identity and learns new ones (the
// caller saves it).
FileCheckReport check_files(const Inventory& inventory, std::span<const CheckRequest> requests,
                            HashPolicy policy, const std::unordered_set<std::string>& always_hash,
                            HashCache* cache);

// The identity a file of a known state has now (an absolute path), where the caller stat'ed it
// already; nullopt: stat it.
using KnownIdentity = std::function<std::optional<FileIdentity>(std::string_view absolute_path)>;

// check_files in two halves, so that the stat pass (the bulk of a warm check) can run while
// the caller still works out which files to hash: stat_files stats every requested file (on
// every core) and keeps what it saw; check_files(inventory, stats, ...) then hashes, judges
// and reports exactly as the one-call form does. `inventory` must be the same, unchanged.
class FileStats {
 public:
  FileStats(FileStats&&) noexcept;
  FileStats& operator=(FileStats&&) noexcept;
  ~FileStats();
  struct Impl;

 private:
  explicit FileStats(std::unique_ptr<Impl> impl);
  friend FileStats stat_files(const Inventory& inventory, std::vector<CheckRequest> requests,
                              const KnownIdentity& known);
  friend FileCheckReport check_files(const Inventory& inventory, FileStats stats, HashPolicy policy,
                                     const std::unordered_set<std::string>& always_hash,
                                     HashCache* cache);
  friend std::size_t known_count(const FileStats& stats);
  std::unique_ptr<Impl> m_impl;
};

// `known` (may be empty) answers for files stat'ed already: a regular file it knows is not
// stat'ed again.
FileStats stat_files(const Inventory& inventory, std::vector<CheckRequest> requests,
                     const KnownIdentity& known = nullptr);
// How many of the files stat_files was asked for `known` answered.
std::size_t known_count(const FileStats& stats);
FileCheckReport check_files(const Inventory& inventory, FileStats stats, HashPolicy policy,
                            const std::unordered_set<std::string>& always_hash, HashCache* cache);

// Hashes one file with the reader check_files uses (large sequential reads). Counts the bytes
// read into `bytes_read` when given.
Result<Sha256Digest> hash_file(const fs::path& path, std::uint64_t* bytes_read = nullptr);

}  // namespace venvfix::dist
