// The previous walk of a venv, which the next whole-venv snapshot may carry directories over from
// (private to txn). <venv>/.venvfix/walk-base is a hard link to the manifest of the last tree
// snapshot created (it outlives that snapshot's deletion); snapshots/README.md, "Format 3".
//
// Why carrying a directory over is sound: every change to a directory's entries (a file created,
// unlinked or renamed in or out of it, pip's writes and removals included) sets the directory's
// ctime to the filesystem clock's now, and ctime cannot be set by any call. So a directory whose
// inode and ctime (and mtime) are what a walk recorded, recorded before that walk began (older than
// the walk's clock: a change in the same clock tick could not be told apart), still has exactly the
// entries that walk listed, with the same inodes. What it cannot show is a file *written in place*
// (or chmod'ed) since: the carried identity of such a file is older than the snapshot, which
// unchanged_since_walk (link_store.hpp) accounts for at restore.
#pragma once

#include <sys/stat.h>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "txn/manifest.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::txn {

// <venv>/.venvfix/walk-base.
fs::path walk_base_file(const env::Venv& venv);

// Whether the directory recorded as `was` by a walk that began at `walked_ns` (a version 3 tree
// manifest's D entry, carried or not) is, now `now` (fstat of the opened directory), the same
// inode with the same entries, each with the inode the walk recorded (the reasoning above).
bool directory_unchanged_since_walk(const ManifestEntry& was, std::int64_t walked_ns,
                                    const struct stat& now);

// One entry line of the last walk, indexed without reading its fields: a later snapshot copies
// the lines of the files and symlinks in carried-over directories as they are.
struct WalkLine {
  static constexpr std::uint32_t k_not_a_directory = UINT32_MAX;
  std::uint32_t begin = 0;   // offset of the line in the walk's text
  std::uint32_t length = 0;  // its newline included
  // D lines: its parsed entry, WalkBase::directory; otherwise k_not_a_directory.
  std::uint32_t directory = k_not_a_directory;
  char type = 'F';         // F, S or D (a `d` line is a D)
  std::uint64_t size = 0;  // F and S: the size field (a manifest's header counts bytes)
};

class WalkBase {
 public:
  // The last walk, when there is a usable one (a version 3 tree manifest with its walk time);
  // nullptr otherwise: the next snapshot lists every directory. `store_fd` is the store opened:
  // when the store-state record shows that walk-base is the text this venvfix wrote and that the
  // store still holds its links (links_held), only its directory lines are read whole and the
  // others are copied unread; otherwise every line is read (a bad one: no walk base).
  static std::unique_ptr<WalkBase> load(const env::Venv& venv, int store_fd);

  // Whether directory `rel`, now `st` (fstat of the opened directory), still has the entries the
  // last walk recorded for it.
  bool unchanged(const std::string& rel, const struct stat& st) const;
  // The lines of the entries directly in directory `rel` ("" is the root), in walk order.
  const std::vector<std::uint32_t>& children(const std::string& rel) const;
  const WalkLine& line(std::uint32_t index) const { return m_lines[index]; }
  std::string_view text(const WalkLine& line) const {
    return m_text.view().substr(line.begin, line.length);
  }
  // A D line's entry (its path unescaped).
  const ManifestEntry& directory(const WalkLine& line) const {
    return m_directories[line.directory];
  }
  // Any line read whole (F lines when the store's links are not known to be held).
  Result<ManifestEntry> entry(const WalkLine& line) const;
  std::size_t text_size() const { return m_text.size(); }

  // Whether the store still holds a link for every file entry of this walk, so that a snapshot
  // need not read the store to know it: the walk that wrote this base recorded the identities of
  // walk-base and of the store directory beside it (remember_store), and neither has changed
  // since. Every link made or dropped changes the store's mtime and ctime; a drop in the same clock
  // tick is covered by drop_unreferenced_store_links, which forgets the record first.
  bool links_held() const { return m_links_held; }

 private:
  WalkBase(MappedFile text, Manifest header)
      : m_text(std::move(text)), m_header(std::move(header)) {}
  // Reads the entry lines from offset `at` (line `line_number` of `source`); false (logged) when
  // one is bad.
  bool index(std::size_t at, std::size_t line_number, std::string_view source);
  // m_children from each line's path (unescaped).
  void group_children(const std::vector<std::string_view>& paths);

  MappedFile m_text;
  Manifest m_header;  // no entries
  bool m_links_held = false;
  std::vector<WalkLine> m_lines;
  // A deque: the views below point into its paths, and it grows while lines are indexed.
  std::deque<ManifestEntry> m_directories;
  std::deque<std::string> m_unescaped_paths;  // of the other lines with an escape in their path
  // Directories by path (unescaped); children: [0] the root's, [1 + d] those of m_directories[d].
  std::unordered_map<std::string_view, std::uint32_t> m_dir_by_path;
  std::vector<std::vector<std::uint32_t>> m_children;
};

// Makes `manifest` (a tree snapshot's, just written) the base of the next walk: a hard link
// renamed over walk-base. A failure only costs the next snapshot a full walk (logged); returns
// whether walk-base is now `manifest`.
bool remember_walk(const env::Venv& venv, const fs::path& manifest);

// After remember_walk made the walk just finished the base (every link it needed made): records
// the store directory's identity now with that of walk-base, in <venv>/.venvfix/store-state.
// Not made durable: a record lost, torn or older than walk-base only costs the next snapshot a
// read of the store.
void remember_store(const env::Venv& venv, int store_fd);
// Removes the record (before links are dropped from the store).
Status forget_store(const env::Venv& venv);
// Whether the record matches walk-base and the store (opened as `store_fd`) as they are now:
// WalkBase::links_held without reading walk-base's manifest.
bool store_record_holds(const env::Venv& venv, int store_fd);

// The filesystem's clock now: the ctime of <venv>/.venvfix/clock right after touching it. Every
// inode change after this call gets a ctime at least this (the kernel's timestamps never go back,
// unless the wall clock is set back), every change before it at most this.
Result<std::int64_t> filesystem_now(const env::Venv& venv);

}  // namespace venvfix::txn
