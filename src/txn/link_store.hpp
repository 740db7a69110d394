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
#include <string>
#include <unordered_set>

#include "txn/manifest.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::txn {

// <venv>/.venvfix/store and its venv-relative form.
fs::path store_dir(const env::Venv& venv);
inline constexpr std::string_view k_store_rel = ".venvfix/store";

// The store name of an F entry (or of the venv file it was recorded from).
std::string store_key(const ManifestEntry& entry);

// The names the store holds (none when it does not exist yet).
Result<std::unordered_set<std::string>> store_names(const env::Venv& venv);

// Whether the stored link `key` still holds the bytes the entry recorded: present, with the
// entry's size and mtime (a write through a venv name sharing its inode changes them).
enum class StoredState { intact, missing, changed_in_place };
StoredState stored_state(int store_fd, const std::string& key, const ManifestEntry& entry,
                         struct stat* out = nullptr);

// Unlinks every store name that no version 2 tree snapshot's manifest references; returns how
// many. Refuses (drops nothing) when a manifest cannot be read: it may reference any of them.
Result<std::size_t> drop_unreferenced_store_links(const env::Venv& venv);

}  // namespace venvfix::txn
