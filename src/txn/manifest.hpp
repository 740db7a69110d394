// The snapshot manifest, format version 3 (documented in snapshots/README.md; versions 1 and 2
// are still read):
//
//   venvfix-snapshot 3
//   id <id>
//   kind tree|transaction
//   created <UTC ISO 8601>
//   method reflink|hardlink|rename
//   reason <text, escaped>
//   walked <ns>                                     (version 3 tree snapshots)
//   files <n>                                       (version 3)
//   bytes <n>                                       (version 3)
//   entries
//   <type> <mode octal> <size> <dev> <ino> <nlink> <mtime_ns> <ctime_ns> <path, escaped>
//   S … <path, escaped><TAB><target, escaped>      (version 2+ tree snapshots)
//   …
//
// Types: F regular file (version 1: held under files/<path>; version 2+ tree: held in the venv's
// link store, link_store.hpp) and S symlink (version 1: under files/<path>; version 2+ tree: its
// target in the entry); D a directory of the state; d (version 3 tree) a directory of the state
// whose entries were carried over from the previous walk because its identity had not changed
// since (snapshot_create.cpp); A a path the transaction added and C a directory it created (both
// absent in the state). Identity fields are those of the venv file when the snapshot was taken
// (after linking), or, below a `d` directory, when an earlier walk recorded them; 0 where they do
// not apply (and for every directory before version 3). Escaping: '%', newline, carriage return
// and (version 2+) tab as %25, %0A, %0D, %09. Unknown header keys are ignored (so a later writer
// of the same version may add some); an unknown version is refused.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {

inline constexpr int k_manifest_format = 3;
inline constexpr int k_oldest_manifest_format = 1;

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
  std::string target;  // S entries of version 2+ tree snapshots: the symlink's target
  // Version 3 tree snapshots: a D entry written `d` (its entries were carried over from an
  // earlier walk), and every file and symlink directly in such a directory (its identity may be
  // older than the snapshot: see unchanged_since_walk in link_store.hpp). Not a directory in one:
  // every walk enters it and records its identity then.
  bool carried = false;
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
  // Version 3 tree snapshots: the filesystem's clock when the walk began (the ctime of a file
  // venvfix touched then, snapshot_create.cpp); 0 when unknown.
  std::int64_t walked_ns = 0;
  std::vector<ManifestEntry> entries;
  // Version 3: how many files and symlinks the entries hold and their total size, in the header,
  // so that listing snapshots reads no entries (load_manifest_header); empty when not written.
  std::optional<std::uint64_t> header_files;
  std::optional<std::uint64_t> header_bytes;

  // From the entries; from the header counts when only the header was read.
  SnapshotInfo info() const;
};

// `text` with room for `size` bytes, its pages faulted in at once: a 30,000-file venv's manifest
// is 3.7 MB, a string grown by doubling copies it over and over, and on the virtual machines
// measured a fresh process's page faults cost more than writing the text (docs/benchmarks.md).
void reserve_text(std::string& text, std::size_t size);

std::string manifest_text(const Manifest& manifest);
// manifest_text in parts, for a writer that makes the entry lines itself: the header lines through
// "entries" (with `counted`'s files and bytes: version 3), and one entry's line, newline included.
std::string manifest_header_text(const Manifest& manifest, const SnapshotInfo& counted);
void append_entry_line(std::string& out, const ManifestEntry& entry, const Manifest& manifest);
// Entries over 1 MiB are read in two halves on two threads (a 30,000-file venv's manifest is read
// by every later snapshot and every rollback); errors name `source` and the line.
Result<Manifest> parse_manifest(std::string_view text, std::string_view source);

// Where a manifest's entry lines begin: the offset of the first and its line number (1-based).
struct EntriesStart {
  std::size_t at = 0;
  std::size_t line = 0;
};
// parse_manifest in parts: the header lines of `text`, through "entries", into `manifest` (no
// entries); and one entry line (without its newline) of a manifest with that header, read as
// parse_manifest reads it but for the carried mark of a non-directory (mark_carried_children).
// A bad entry's error says only what is wrong: the caller names the file and line.
Result<EntriesStart> parse_manifest_header(std::string_view text, std::string_view source,
                                           Manifest& manifest);
Result<ManifestEntry> parse_entry(std::string_view line, const Manifest& header);

// What a later snapshot needs of a tree manifest's entry line without reading it whole (it copies
// most lines of the last walk as they are): its type (`d` as written), its size field, and its
// path as written (escaped; a symlink's target not included). False when the line has not the
// fields of an entry; its numbers other than the size are not read.
struct EntryLineShape {
  char type = 0;
  std::uint64_t size = 0;
  std::string_view raw_path;
};
bool shape_of_entry_line(std::string_view line, EntryLineShape& shape);
// The identities (device, inode, size, mtime, mode; no ctime) of the F entries of a version 2+
// tree manifest's `text`, each handed to `visit` in file order; a manifest of another kind or
// version visits none. Only the header and those fields are read (no path is unescaped or
// checked): deciding which store links the kept snapshots still reference reads every one of
// them, and their paths do not matter there. Errors (a bad header, an F line whose fields are
// not numbers) name `source` and the line.
Status visit_stored_identities(std::string_view text, std::string_view source,
                               const std::function<void(const FileIdentity&)>& visit);
// Maps `file` and parses it. Mapped, not read: a 30,000-file venv's manifest is megabytes, and
// manifests (the walk base too) are replaced by rename, never rewritten in place, so the
// mapping cannot shrink under the parse. A file over 1 GiB is an error naming it.
Result<Manifest> read_manifest_file(const std::filesystem::path& file);
// `file` mapped (read_manifest_file's first half; the same errors).
Result<MappedFile> map_manifest_file(const std::filesystem::path& file);

}  // namespace venvfix::txn
