// Snapshots under <venv>/.venvfix/snapshots/<id>/ (format: snapshots/README.md).
//
// Two kinds share one manifest format and one restore path:
// - tree: a whole-venv snapshot (`snapshot create`, `run`). Files are reflink clones where the
//   filesystem supports them, else hard links whose identity (device, inode, size, mtime,
//   ctime, recorded after linking) is checked at restore: a file changed in place since is
//   refused, naming it, instead of restoring wrong bytes.
// - transaction: what a committed transaction replaced or removed (the files themselves,
//   renamed, never copied) plus the list of paths it added.
// Restoring (rollback_to) is itself a journaled transaction, so it is crash-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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
  std::string method;       // "reflink", "hardlink", "rename"
  std::uint64_t files = 0;  // files and symlinks held
  std::uint64_t bytes = 0;  // their total size (apparent; no data is copied)
  int format = 1;           // manifest format version
};

fs::path snapshots_dir(const env::Venv& venv);

// A whole-venv snapshot (everything except .venvfix/). Costs no copy of file data.
Result<SnapshotInfo> create_snapshot(const env::Venv& venv, const VenvLock& lock,
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

Status delete_snapshot(const env::Venv& venv, const VenvLock& lock, const std::string& id);
// Deletes all but the newest `keep` snapshots; returns the deleted ids.
Result<std::vector<std::string>> prune_snapshots(const env::Venv& venv, const VenvLock& lock,
                                                 std::size_t keep);

// How the venv now differs from the snapshot's state (venv-relative paths, sorted): restoring
// would add back `removed`, take out `added`, and put back `changed`.
struct SnapshotDiff {
  std::vector<std::string> added;    // in the venv, not in the snapshot state
  std::vector<std::string> removed;  // in the snapshot state, not in the venv
  std::vector<std::string> changed;  // in both, different file
};
Result<SnapshotDiff> diff_snapshot(const env::Venv& venv, const std::string& id);

}  // namespace venvfix::txn
