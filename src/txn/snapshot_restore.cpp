// Restoring a snapshot: one journaled transaction. A version 2 tree snapshot is restored from the
// link store (store_restore.hpp) and stays as it is. For a version 1 tree snapshot and a
// transaction snapshot the staging directory is the snapshot's files/ directory: a version 1
// tree snapshot is kept (what moved out of it is linked back after the commit), a transaction
// snapshot is used up.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "txn/manifest.hpp"
#include "txn/snapshot_state.hpp"
#include "txn/store_restore.hpp"
#include "venvfix/txn/snapshot.hpp"
#include "venvfix/txn/transaction.hpp"

namespace venvfix::txn {

namespace {

// Every file to put back must still be the file the snapshot recorded: for a hard link the
// whole identity (a write through the venv's path changes the shared inode), otherwise its size.
Status check_unchanged(const env::Venv& venv, const Manifest& manifest,
                       const std::vector<std::string>& put_back) {
  fs::path files = snapshots_dir(venv) / manifest.id / "files";
  std::vector<const ManifestEntry*> by_path;
  for (const ManifestEntry& e : manifest.entries) {
    if (e.type == 'F') by_path.push_back(&e);
  }
  std::sort(by_path.begin(), by_path.end(),
            [](const auto* a, const auto* b) { return a->path < b->path; });
  for (const std::string& path : put_back) {
    auto it = std::lower_bound(by_path.begin(), by_path.end(), path,
                               [](const auto* e, const std::string& p) { return e->path < p; });
    fs::path held = files / path;
    struct stat st {};
    if (::lstat(held.c_str(), &st) != 0) {
      return make_error(ExitCode::error,
                        "cannot restore snapshot {}: its copy of {} is missing ({}); nothing was "
                        "changed",
                        manifest.id, (venv.root / path).string(), held.string());
    }
    if (it == by_path.end() || (*it)->path != path) continue;  // a symlink
    const ManifestEntry& e = **it;
    FileIdentity id = file_identity_from(st);
    bool same = id.size == e.size;
    if (manifest.method == "hardlink") {
      // A write through the venv's name changes mtime (and most often size). ctime changes
      // with any link count change too (pip unlinking the venv's name), so it is compared
      // only when the link count is what was recorded: then it catches a write whose mtime
      // was set back.
      same = same && id.device == e.dev && id.inode == e.ino && id.mtime_ns == e.mtime_ns &&
             (static_cast<std::uint64_t>(st.st_nlink) != e.nlink || id.ctime_ns == e.ctime_ns);
    }
    if (!same) {
      return make_error(ExitCode::error,
                        "cannot restore snapshot {}: {} was changed in place after the snapshot "
                        "was taken (it shares its data with the snapshot's hard link), so the "
                        "snapshot no longer holds its old bytes; nothing was changed",
                        manifest.id, (venv.root / path).string());
    }
  }
  return ok();
}

}  // namespace

Result<std::optional<std::string>> restore_snapshot(const env::Venv& venv, const VenvLock& lock,
                                                    const std::string& id, KeepSnapshot keep,
                                                    StepFs& disk) {
  VENVFIX_TRY(require_no_unfinished_transaction(venv));
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  VENVFIX_TRY_ASSIGN(Manifest manifest, load_manifest(venv, id));
  const Clock::time_point loaded = Clock::now();
  VENVFIX_TRY_ASSIGN(StateDelta delta, compare_with_venv(venv, manifest));
  spdlog::debug(
      "snapshot {}: manifest read in {:.1f} ms, compared with the venv in {:.1f} ms ({} "
      "directories read, {} not read: unchanged since the snapshot's walk)",
      id, std::chrono::duration<double, std::milli>(loaded - start).count(),
      std::chrono::duration<double, std::milli>(Clock::now() - loaded).count(), delta.dirs_read,
      delta.dirs_unchanged);
  if (manifest.kind == SnapshotKind::tree && manifest.format >= 2) {
    return restore_from_store(venv, lock, manifest, delta, keep, disk);
  }
  VENVFIX_TRY(check_unchanged(venv, manifest, delta.put_back));

  ChangeSet changes;
  changes.reason = fmt::format("rollback to {}", id);
  changes.staging = snapshots_dir(venv) / id / "files";
  changes.add = delta.put_back;
  changes.remove = delta.added_files;
  changes.remove.insert(changes.remove.end(), delta.changed.begin(), delta.changed.end());
  DirectoryChanges dirs;
  dirs.make = delta.missing_dirs;
  dirs.remove = delta.added_dirs;
  dirs.prune = DirectoryChanges::Prune::listed_only;
  // A whole-venv snapshot stays (made whole again after the commit): restoring it costs only
  // the files that differ, and it can be restored again. A transaction's snapshot is used up.
  dirs.keep_source = manifest.kind == SnapshotKind::tree;
  spdlog::debug("restoring {}: {} to put back, {} to remove, {} directories to make, {} to remove",
                id, changes.add.size(), changes.remove.size(), dirs.make.size(),
                dirs.remove.size());
  VENVFIX_TRY_ASSIGN(Transaction txn,
                     Transaction::begin_consuming(venv, lock, changes, dirs, id, disk));
  VENVFIX_TRY(txn.execute());
  return txn.commit(keep);
}

Status rollback_to(const env::Venv& venv, const VenvLock& lock, const std::string& id) {
  VENVFIX_TRY(restore_snapshot(venv, lock, id, KeepSnapshot::no));
  return ok();
}

}  // namespace venvfix::txn
