// Snapshots under <venv>/.venvfix/snapshots/<id>/ (format: snapshots/README.md).
//
// Two kinds share one manifest format and one restore path:
// - tree: a whole-venv snapshot (`snapshot create`, `run`). Its manifest records every path's
//   identity (type, mode, size, mtime, device, inode; symlink targets); the files are held by one
//   store of hard links under <venv>/.venvfix/store/ that all tree snapshots share, keyed by
//   identity, so a snapshot links only files the store does not hold yet, and reads only the
//   directories that changed since the last snapshot. A restore touches only the paths whose
//   identity differs, and refuses, naming it, a file changed in place since (its inode is the
//   stored one, so the old bytes are gone). Format 1 tree snapshots (a mirror tree of links or
//   clones under files/) are still restored.
// - transaction: what a committed transaction replaced or removed (the files themselves,
//   renamed, never copied) plus the list of paths it added.
// Restoring (rollback_to) is itself a journaled transaction, so it is crash-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/transaction.hpp"

namespace venvfix::txn {

enum class SnapshotKind { tree, transaction };
std::string_view to_string(SnapshotKind kind);

struct SnapshotInfo {
  std::string id;
  SnapshotKind kind = SnapshotKind::tree;
  std::string created;  // UTC ISO 8601
  std::string reason;
  std::string method;        // "reflink", "hardlink", "rename"
  std::uint64_t files = 0;   // files and symlinks held
  std::uint64_t bytes = 0;   // their total size (apparent; no data is copied)
  int format = 1;            // manifest format version
  std::uint64_t linked = 0;  // create_snapshot only: links it added to the store
  // create_snapshot only: directories it read, and directories whose entries it carried over
  // from the last walk because they had not changed since.
  std::uint64_t dirs_listed = 0;
  std::uint64_t dirs_carried = 0;
  // create_snapshot only: it read the store's names, because it could not know that the store
  // still held every file of the last walk (none, or links dropped or made since).
  bool store_read = false;
};

fs::path snapshots_dir(const env::Venv& venv);

struct Manifest;  // txn's own (src/txn/manifest.hpp)

// A tree snapshot this process just made, with its manifest as written still in memory: comparing
// the venv with it (diff_snapshot below) reads no manifest. `run` compares right after its
// command, and a 30,000-file venv's manifest takes longer to parse than the comparison's stats.
struct TakenSnapshot {
  SnapshotInfo info;
  std::shared_ptr<const Manifest> manifest;  // never null
  // The store links this snapshot added (their names in the store): no other snapshot references
  // them, since every older one was taken before they existed (delete_taken_snapshot).
  std::vector<std::string> added_links;
};

// A whole-venv snapshot (everything except .venvfix/). Costs no copy of file data: a hard link
// per file the store does not hold yet, and a stat per path in each directory that changed since
// the last walk (a directory whose identity did not change is not read: its entries are carried
// over, snapshots/README.md "Format 3"), one per directory otherwise.
Result<SnapshotInfo> create_snapshot(const env::Venv& venv, const VenvLock& lock,
                                     std::string reason);
// create_snapshot, keeping the manifest it wrote.
Result<TakenSnapshot> take_snapshot(const env::Venv& venv, const VenvLock& lock,
                                    std::string reason);

// Every readable snapshot, oldest first. Unreadable ones are skipped with a warning.
Result<std::vector<SnapshotInfo>> list_snapshots(const env::Venv& venv);
// `id`, or the newest when nullopt; ExitCode::usage naming the id when there is none.
Result<SnapshotInfo> find_snapshot(const env::Venv& venv, const std::optional<std::string>& id);

// Restores the venv to the snapshot's state as one journaled transaction. Refuses (nothing
// changed) when a hard-linked file was changed in place, naming it. A tree snapshot is kept
// (restorable again); a transaction snapshot is used up. With KeepSnapshot::yes what the restore
// replaced is kept as a new transaction snapshot (its id returned), so the rollback itself can be
// rolled back. The transaction's writes go through `disk`.
Result<std::optional<std::string>> restore_snapshot(const env::Venv& venv, const VenvLock& lock,
                                                    const std::string& id, KeepSnapshot keep,
                                                    StepFs& disk = default_step_fs());
// restore_snapshot without keeping the replaced state.
Status rollback_to(const env::Venv& venv, const VenvLock& lock, const std::string& id);

// Both also drop the store links no remaining snapshot references.
Status delete_snapshot(const env::Venv& venv, const VenvLock& lock, const std::string& id);
// delete_snapshot of a snapshot this process took and nothing has taken since (the lock held
// throughout): drops only the store links it added, reading no other snapshot's manifest. `run`
// deletes its snapshot after every command that changed the venv, and reading every kept
// snapshot's manifest to find what else is unreferenced costs a parse of each (15 kept
// snapshots of a 30,000-file venv: over half a second).
Status delete_taken_snapshot(const env::Venv& venv, const VenvLock& lock,
                             const TakenSnapshot& snapshot);
// Removes the snapshot but keeps its store links, even those no other snapshot references: for a
// snapshot of a venv that has not changed since (`run` of a command that changed nothing), whose
// links are those of files still in the venv, cost no space, and are what the next snapshot
// needs. delete_snapshot and prune_snapshots drop them once no snapshot references them.
Status discard_snapshot(const env::Venv& venv, const VenvLock& lock, const std::string& id);
// Deletes all but the newest `keep` snapshots; returns the deleted ids.
Result<std::vector<std::string>> prune_snapshots(const env::Venv& venv, const VenvLock& lock,
                                                 std::size_t keep);
// Deletes all but the newest `keep` of the snapshots whose reason starts with `reason_prefix`
// (the others are neither deleted nor counted), then the store links no remaining snapshot
// references; returns the deleted ids. Reads only the snapshots' headers when none is to go. The
// guard's retention: every guarded pip call keeps a snapshot, and its store links keep the files
// that call replaced.
Result<std::vector<std::string>> prune_snapshots_with_reason(const env::Venv& venv,
                                                             const VenvLock& lock, std::size_t keep,
                                                             std::string_view reason_prefix);

// How the venv now differs from the snapshot's state (venv-relative paths, sorted): restoring
// would add back `removed`, take out `added`, and put back `changed`.
struct SnapshotDiff {
  std::vector<std::string> added;    // in the venv, not in the snapshot state
  std::vector<std::string> removed;  // in the snapshot state, not in the venv
  std::vector<std::string> changed;  // in both, different file
  // diff_snapshot of a TakenSnapshot only: each regular file of the snapshot that is a regular
  // file in the venv now, by venv-relative path (views into the snapshot's manifest: valid while
  // the TakenSnapshot lives), with the identity the comparison's stat found.
  std::unordered_map<std::string_view, FileIdentity> files_seen;
};
Result<SnapshotDiff> diff_snapshot(const env::Venv& venv, const std::string& id);
// The same against a snapshot this process took, from its manifest in memory.
Result<SnapshotDiff> diff_snapshot(const env::Venv& venv, const TakenSnapshot& snapshot);

}  // namespace venvfix::txn
