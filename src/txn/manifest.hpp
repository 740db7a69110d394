// The snapshot manifest, format version 1 (documented in snapshots/README.md):
//
//   venvfix-snapshot 1
//   id <id>
//   kind tree|transaction
//   created <UTC ISO 8601>
//   method reflink|hardlink|rename
//   reason <text, escaped>
//   entries
//   <type> <mode octal> <size> <dev> <ino> <nlink> <mtime_ns> <ctime_ns> <path, escaped>
//   …
//
// Types: F regular file and S symlink held under files/<path>; D a directory of the state;
// A a path the transaction added and C a directory it created (both absent in the state). Identity
// fields are those of the venv file when the snapshot was taken (after linking); 0 where they do
// not apply. Escaping: '%', newline and carriage return as %25, %0A, %0D. Unknown header keys are
// ignored (so a later format 1 writer may add some); an unknown version is refused.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {

inline constexpr int k_manifest_format = 1;

struct ManifestEntry {
  char type = 'F';
  std::uint32_t mode = 0;
  std::uint64_t size = 0;
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::uint64_t nlink = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::string path;
};

// An F or S entry with the identity of `st`; a D, C or A entry with only a mode.
ManifestEntry entry_from_stat(char type, const struct stat& st, std::string path);
ManifestEntry plain_entry(char type, std::uint32_t mode, std::string path);

struct Manifest {
  int format = k_manifest_format;
  std::string id;
  SnapshotKind kind = SnapshotKind::tree;
  std::string created;
  std::string method;
  std::string reason;
  std::vector<ManifestEntry> entries;

  SnapshotInfo info() const;
};

std::string manifest_text(const Manifest& manifest);
Result<Manifest> parse_manifest(std::string_view text, std::string_view source);

}  // namespace venvfix::txn
