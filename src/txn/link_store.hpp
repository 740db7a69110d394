// The link store (private to txn): <venv>/.venvfix/store/, one hard link per file identity that
// any version 2 tree snapshot holds, shared by all of them (snapshots/README.md, "The store").
//
// A store name is the identity of the venv file it was linked from: device, inode, size, mtime
// and mode (hex, mode octal). While the store holds a link the inode cannot be freed, so its
// number cannot be reused: a venv file whose identity is a store name *is* that stored file, and
// a snapshot needs no new link for it. A write through the venv's name changes the shared inode
// (its size or mtime no longer match its store name): rollback detects that and refuses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "txn/manifest.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::txn {

// <venv>/.venvfix/store and its venv-relative form.
fs::path store_dir(const env::Venv& venv);
inline constexpr std::string_view k_store_rel = ".venvfix/store";

// The store name of an F entry (or of the venv file it was recorded from), of an identity.
std::string store_key(const ManifestEntry& entry);
std::string store_key(const FileIdentity& id);

// A store name as the identity it spells (its ctime 0): looked up without formatting or hashing
// a string per file (a snapshot looks up every file of the venv).
struct StoreIdHash {
  std::size_t operator()(const FileIdentity& id) const;
};
using StoreIds = std::unordered_set<FileIdentity, StoreIdHash>;
FileIdentity store_id(const ManifestEntry& entry);
// Store names by the identity they spell, each its index in a list of names: an open-addressing
// table in one array, looked up once per file entry of every kept snapshot (a node-based map
// spent half of that in cache misses).
class StoreNameIndex {
 public:
  explicit StoreNameIndex(std::size_t capacity);
  // A second index for an identity already in is ignored.
  void insert(const FileIdentity& id, std::size_t index);
  std::optional<std::size_t> find(const FileIdentity& id) const;

 private:
  struct Slot {
    FileIdentity id;
    std::size_t index_plus_one = 0;  // 0: empty
  };
  std::vector<Slot> m_slots;
  std::size_t m_mask = 0;
};

// The identities the store holds (none when it does not exist yet); names that spell none are
// left out (never venvfix's).
Result<StoreIds> store_ids(const env::Venv& venv);

// Whether `now`, the inode an entry of `manifest` recorded (its venv file or its store link), is
// still what the snapshot holds although its size, mtime or mode differ from the entry: the entry
// was carried over from an earlier walk (walk_base.hpp), so the file may have been written in place
// or chmod'ed before this snapshot was taken, and nothing about the inode has changed since the
// snapshot's walk began (its ctime is older than the walk's clock). Then what it holds now is what
// it held when the snapshot was taken. False for every entry that was stat'ed by its own walk:
// any difference there is a change after the snapshot.
bool unchanged_since_walk(const Manifest& manifest, const ManifestEntry& entry,
                          const FileIdentity& now);

// Whether the stored link `key` still holds the bytes the entry recorded: present, with the
// entry's size and mtime (a write through a venv name sharing its inode changes them) and, for an
// entry carried over, its mode; or unchanged since the walk (above; then `*current` is set: the
// inode's mode is the snapshot's).
enum class StoredState { intact, missing, changed_in_place };
StoredState stored_state(int store_fd, const std::string& key, const Manifest& manifest,
                         const ManifestEntry& entry, struct stat* out = nullptr,
                         bool* current = nullptr);

// Unlinks every store name that no version 2 tree snapshot's manifest references; returns how
// many. Refuses (drops nothing) when a manifest cannot be read: it may reference any of them.
Result<std::size_t> drop_unreferenced_store_links(const env::Venv& venv);
// Removes these store links (names in the store; one already gone is no error), first telling
// the next snapshot to read the store (forget_store).
Status drop_store_links(const env::Venv& venv, const std::vector<std::string>& names);

}  // namespace venvfix::txn
