// Listing, finding, diffing and deleting snapshots.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "txn/link_store.hpp"
#include "txn/manifest.hpp"
#include "txn/paths.hpp"
#include "txn/snapshot_state.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {

namespace {

// The names in the snapshots directory (none when it does not exist).
Result<std::vector<std::string>> snapshot_dir_names(const fs::path& base) {
  std::vector<std::string> names;
  std::error_code error;
  fs::directory_iterator it(base, error);
  if (error == std::errc::no_such_file_or_directory) return names;
  for (; !error && it != fs::directory_iterator(); it.increment(error)) {
    names.push_back(it->path().filename().string());
  }
  if (error) {
    return make_error(ExitCode::error, "cannot read {}: {}", base.string(), error.message());
  }
  return names;
}

bool has_manifest(const fs::path& dir) {
  return ::access((dir / "manifest").c_str(), F_OK) == 0;
}

}  // namespace

Result<std::vector<SnapshotInfo>> list_snapshots(const env::Venv& venv) {
  std::vector<SnapshotInfo> out;
  fs::path base = snapshots_dir(venv);
  VENVFIX_TRY_ASSIGN(std::vector<std::string> names, snapshot_dir_names(base));
  for (const std::string& id : names) {
    if (!is_safe_id(id) || !has_manifest(base / id)) continue;
    auto manifest = load_manifest_header(venv, id);
    if (!manifest) {
      spdlog::warn("skipping snapshot {}: {}", id, manifest.error().message);
      continue;
    }
    out.push_back(manifest->info());
  }
  std::sort(out.begin(), out.end(), [](const SnapshotInfo& a, const SnapshotInfo& b) {
    return std::tie(a.created, a.id) < std::tie(b.created, b.id);
  });
  return out;
}

Result<SnapshotInfo> find_snapshot(const env::Venv& venv, const std::optional<std::string>& id) {
  if (id) {
    VENVFIX_TRY_ASSIGN(Manifest manifest, load_manifest_header(venv, *id));
    return manifest.info();
  }
  VENVFIX_TRY_ASSIGN(auto all, list_snapshots(venv));
  if (all.empty()) {
    return make_error(ExitCode::usage, "the venv {} has no snapshots", venv.root.string());
  }
  return all.back();
}

namespace {

// The manifest goes first, so an interrupted delete leaves garbage, never a broken snapshot.
Status remove_snapshot(const env::Venv& venv, const std::string& id) {
  fs::path dir = snapshots_dir(venv) / id;
  if (::unlink((dir / "manifest").c_str()) != 0 && errno != ENOENT) {
    return make_error(ExitCode::error, "cannot delete {}: {}", (dir / "manifest").string(),
                      errno_message(errno));
  }
  std::error_code error;
  fs::remove_all(dir, error);
  if (error) {
    return make_error(ExitCode::error, "cannot delete {}: {}", dir.string(), error.message());
  }
  return ok();
}

}  // namespace

Status delete_snapshot(const env::Venv& venv, const VenvLock& lock, const std::string& id) {
  (void)lock;
  // An unfinished restore may still need this snapshot's files to roll back.
  VENVFIX_TRY(require_no_unfinished_transaction(venv));
  VENVFIX_TRY(load_manifest(venv, id));
  VENVFIX_TRY(remove_snapshot(venv, id));
  VENVFIX_TRY(drop_unreferenced_store_links(venv));
  return ok();
}

Status delete_taken_snapshot(const env::Venv& venv, const VenvLock& lock,
                             const TakenSnapshot& snapshot) {
  (void)lock;
  VENVFIX_TRY(require_no_unfinished_transaction(venv));
  VENVFIX_TRY(remove_snapshot(venv, snapshot.info.id));
  VENVFIX_TRY(drop_store_links(venv, snapshot.added_links));
  spdlog::debug("store {}: dropped the {} links snapshot {} added", store_dir(venv).string(),
                snapshot.added_links.size(), snapshot.info.id);
  return ok();
}

Status discard_snapshot(const env::Venv& venv, const VenvLock& lock, const std::string& id) {
  (void)lock;
  VENVFIX_TRY(require_no_unfinished_transaction(venv));
  if (!is_safe_id(id)) return make_error(ExitCode::usage, "{} is not a snapshot id", id);
  return remove_snapshot(venv, id);
}

namespace {

// Deletes all but the newest `keep` of the snapshots `counts` accepts (oldest first); returns
// their ids. The store links they held are left to the caller's drop.
template <typename Counts>
Result<std::vector<std::string>> remove_beyond_newest(const env::Venv& venv, std::size_t keep,
                                                      Counts counts) {
  VENVFIX_TRY(require_no_unfinished_transaction(venv));
  VENVFIX_TRY_ASSIGN(auto all, list_snapshots(venv));
  std::vector<std::string> counted;
  for (const SnapshotInfo& info : all) {
    if (counts(info)) counted.push_back(info.id);
  }
  if (counted.size() <= keep) return std::vector<std::string>{};
  counted.resize(counted.size() - keep);
  for (const std::string& id : counted) VENVFIX_TRY(remove_snapshot(venv, id));
  return counted;
}

}  // namespace

Result<std::vector<std::string>> prune_snapshots(const env::Venv& venv, const VenvLock& lock,
                                                 std::size_t keep) {
  (void)lock;
  VENVFIX_TRY_ASSIGN(std::vector<std::string> deleted,
                     remove_beyond_newest(venv, keep, [](const SnapshotInfo&) { return true; }));
  // Garbage: directories without a manifest (an interrupted create, delete or roll back).
  fs::path base = snapshots_dir(venv);
  VENVFIX_TRY_ASSIGN(std::vector<std::string> names, snapshot_dir_names(base));
  for (const std::string& name : names) {
    if (!has_manifest(base / name)) VENVFIX_TRY(remove_snapshot(venv, name));
  }
  // Links of deleted snapshots, and of an interrupted create (its manifest was never written).
  VENVFIX_TRY(drop_unreferenced_store_links(venv));
  return deleted;
}

Result<std::vector<std::string>> prune_snapshots_with_reason(const env::Venv& venv,
                                                             const VenvLock& lock, std::size_t keep,
                                                             std::string_view reason_prefix) {
  (void)lock;
  VENVFIX_TRY_ASSIGN(std::vector<std::string> deleted,
                     remove_beyond_newest(venv, keep, [&](const SnapshotInfo& info) {
                       return info.reason.starts_with(reason_prefix);
                     }));
  if (deleted.empty()) return deleted;  // below the limit: no manifest is read
  VENVFIX_TRY(drop_unreferenced_store_links(venv));
  return deleted;
}

namespace {

// The delta as what restoring would add back, take out and put back.
SnapshotDiff diff_of(const StateDelta& delta) {
  SnapshotDiff diff;
  diff.added = delta.added_files;
  diff.added.insert(diff.added.end(), delta.added_dirs.begin(), delta.added_dirs.end());
  for (const std::string& path : delta.put_back) {
    if (!std::binary_search(delta.changed.begin(), delta.changed.end(), path)) {
      diff.removed.push_back(path);
    }
  }
  diff.removed.insert(diff.removed.end(), delta.missing_dirs.begin(), delta.missing_dirs.end());
  diff.changed = delta.changed;
  std::sort(diff.added.begin(), diff.added.end());
  std::sort(diff.removed.begin(), diff.removed.end());
  return diff;
}

}  // namespace

Result<SnapshotDiff> diff_snapshot(const env::Venv& venv, const std::string& id) {
  VENVFIX_TRY_ASSIGN(Manifest manifest, load_manifest(venv, id));
  VENVFIX_TRY_ASSIGN(StateDelta delta, compare_with_venv(venv, manifest));
  return diff_of(delta);
}

Result<SnapshotDiff> diff_snapshot(const env::Venv& venv, const TakenSnapshot& snapshot) {
  VENVFIX_TRY_ASSIGN(StateDelta delta,
                     compare_with_venv(venv, *snapshot.manifest, KeepIdentities::yes));
  SnapshotDiff diff = diff_of(delta);
  diff.files_seen.reserve(delta.files_seen.size());
  for (const auto& [entry, identity] : delta.files_seen)
    diff.files_seen.emplace(entry->path, identity);
  return diff;
}

}  // namespace venvfix::txn
