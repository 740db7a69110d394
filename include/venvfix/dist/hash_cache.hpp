// SHA-256 digests of files remembered per file identity (device, inode, size, mtime, ctime),
// so that a second `doctor` reads no library bytes. Stored in <venv>/.venvfix/hash-cache-v1;
// the format is documented in docs/inventory.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <unordered_map>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/base/sha256.hpp"

namespace venvfix::dist {

namespace fs = std::filesystem;

// Wall-clock time in nanoseconds since the epoch. The racy-timestamp rule compares file
// timestamps with it, so tests pass a fixed one instead of waiting for the real clock to move.
using WallClock = std::function<std::int64_t()>;

class HashCache {
 public:
  static constexpr const char* k_file_name = "hash-cache-v1";

  // An empty cache that save() writes to `file`.
  explicit HashCache(fs::path file) : m_file(std::move(file)) {}

  // Loads `file`. Never fails: a missing file gives an empty cache; a corrupt, truncated or
  // foreign file is ignored (was_corrupt() says so, at debug level in the log) and rebuilt by
  // the next save().
  static HashCache load(const fs::path& file);
  // load(<state_dir>/hash-cache-v1).
  static HashCache load_for(const fs::path& state_dir) { return load(state_dir / k_file_name); }

  // The digest remembered for exactly this identity (mode is ignored); marks it as used.
  std::optional<Sha256Digest> lookup(const FileIdentity& identity);
  // Remembers a digest. Returns false (and remembers nothing) when the file was changed too
  // recently to trust its timestamps: a write within the same filesystem clock tick as the
  // hash would leave the identity unchanged ("racy" entries, as git calls them).
  // `hashed_at_ns` is now_ns() when the read started.
  bool remember(const FileIdentity& identity, const Sha256Digest& digest,
                std::int64_t hashed_at_ns);

  // Remembers the digest of bytes this process wrote itself and hashed as it wrote them (apply
  // seeds the files it just moved into the venv, so the verification after the moves reads
  // none of them). No racy rule: nothing else wrote these bytes, and `identity` is the one the
  // file has after its last rename. Returns false for anything but a regular file.
  bool seed(const FileIdentity& identity, const Sha256Digest& digest);

  // The clock remember()'s callers read (venvfix::realtime_ns unless set); called from several
  // threads.
  void set_clock(WallClock clock) { m_clock = std::move(clock); }
  std::int64_t now_ns() const { return m_clock(); }

  // Writes the cache if anything was remembered since it was loaded; otherwise does nothing.
  // When the venv (or its .venvfix directory) is not writable the save is skipped silently
  // (debug log) and ok() returned: a read-only venv is diagnosed, not an error. Other write
  // failures are an Error naming the file.
  Status save();

  bool dirty() const { return m_dirty; }
  bool was_corrupt() const { return m_corrupt; }
  std::size_t size() const { return m_entries.size(); }
  const fs::path& file() const { return m_file; }

  // Serialisation, exposed for tests and tools.
  std::string encode() const;
  // Fails (one sentence) on anything but a complete, checksummed file of version 2 (or 1, which
  // the next save() writes again as version 2).
  Status decode(std::string_view bytes);

 private:
  struct Key {
    std::uint64_t device;
    std::uint64_t inode;
    std::uint64_t size;
    std::int64_t mtime_ns;
    std::int64_t ctime_ns;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& key) const;
  };
  struct Entry {
    Sha256Digest digest;
    bool used = false;
  };
  static Key key_of(const FileIdentity& identity);

  fs::path m_file;
  WallClock m_clock = realtime_ns;
  std::unordered_map<Key, Entry, KeyHash> m_entries;
  bool m_dirty = false;
  bool m_corrupt = false;
};

}  // namespace venvfix::dist
