#include "txn/store_restore.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <set>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "txn/link_store.hpp"
#include "txn/paths.hpp"
#include "txn/replay.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {

namespace {

using EntryIndex = std::unordered_map<std::string_view, const ManifestEntry*>;

// What the store holds for one path to put back, looked up once for the check and the staging.
struct StoredCopy {
  const ManifestEntry* entry = nullptr;
  std::string key;  // F entries: the store name
  StoredState state = StoredState::intact;
  struct stat st {};     // the store link's, unless missing
  bool current = false;  // the inode as it is now is the snapshot's, mode included
};

std::vector<StoredCopy> look_up_store(int store_fd, const Manifest& manifest,
                                      const EntryIndex& entries,
                                      const std::vector<std::string>& put_back) {
  std::vector<StoredCopy> copies(put_back.size());
  for (std::size_t i = 0; i < put_back.size(); ++i) {
    StoredCopy& copy = copies[i];
    copy.entry = entries.at(put_back[i]);
    if (copy.entry->type != 'F') continue;
    copy.key = store_key(*copy.entry);
    copy.state = stored_state(store_fd, copy.key, manifest, *copy.entry, &copy.st, &copy.current);
  }
  return copies;
}

// Every stored file to put back must still hold what the snapshot recorded. All offenders are
// named in one sentence; nothing has been written yet.
Status check_store(const env::Venv& venv, const Manifest& manifest,
                   const std::vector<StoredCopy>& copies) {
  std::vector<std::string> changed;
  std::vector<std::string> missing;
  for (const StoredCopy& copy : copies) {
    const std::string shown = (venv.root / copy.entry->path).string();
    if (copy.state == StoredState::changed_in_place) changed.push_back(shown);
    if (copy.state == StoredState::missing) missing.push_back(shown);
  }
  auto list = [](const std::vector<std::string>& paths) {
    std::string out = paths.front();
    for (std::size_t i = 1; i < paths.size() && i < 10; ++i) out += ", " + paths[i];
    if (paths.size() > 10) out += fmt::format(" and {} more", paths.size() - 10);
    return out;
  };
  if (!changed.empty()) {
    return make_error(ExitCode::error,
                      "cannot restore snapshot {}: {} {} changed in place after the snapshot was "
                      "taken (the snapshot's store link shares its inode), so the snapshot no "
                      "longer holds its old bytes; nothing was changed",
                      manifest.id, list(changed), changed.size() == 1 ? "was" : "were");
  }
  if (!missing.empty()) {
    return make_error(ExitCode::error,
                      "cannot restore snapshot {}: the store {} lacks the copy of {}; nothing was "
                      "changed",
                      manifest.id, store_dir(venv).string(), list(missing));
  }
  return ok();
}

// The bytes of a copy made durable before the journal names it (a link from the store needs no
// such wait: the snapshot made its data durable).
Status sync_copy(StepFs& disk, int rootfd, const std::string& staged, const fs::path& root) {
  if (int error = disk.sync(rootfd, staged, StepFs::Sync::file_data); error != 0) {
    return make_error(ExitCode::error, "{}: fdatasync: {}", (root / staged).string(),
                      errno_message(error));
  }
  return ok();
}

// A stored file whose inode's mode was changed since (chmod through a venv name) keeps its bytes
// but not its mode: it is copied into staging with the recorded mode (a reflink clone where the
// filesystem can, the data otherwise), and made durable.
Status copy_with_mode(StepFs& disk, int store_fd, const std::string& key, int rootfd,
                      const std::string& staged, const fs::path& root, std::uint32_t mode) {
  int in = ::openat(store_fd, key.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (in < 0) {
    return make_error(ExitCode::error, "{}: {}", (root / k_store_rel / key).string(),
                      errno_message(errno));
  }
  Fd in_fd(in);
  int out = ::openat(rootfd, staged.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (out < 0) {
    return make_error(ExitCode::error, "{}: {}", (root / staged).string(), errno_message(errno));
  }
  Fd out_fd(out);
  if (::fchmod(out, mode) != 0) {  // O_CREAT's mode went through the umask
    return make_error(ExitCode::error, "cannot set the mode of {}: {}", (root / staged).string(),
                      errno_message(errno));
  }
  if (::ioctl(out, FICLONE, in) == 0) return sync_copy(disk, rootfd, staged, root);
  for (;;) {
    ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, 1 << 30, 0);
    if (n == 0) return sync_copy(disk, rootfd, staged, root);
    if (n < 0 && errno != EINTR) {
      return make_error(ExitCode::error, "cannot copy {} into {}: {}",
                        (root / k_store_rel / key).string(), (root / staged).string(),
                        errno_message(errno));
    }
  }
}

// Stages one path to put back: a link from the store (or a copy, above), or a symlink. Its
// directory is made unless it was the previous path's (`made`: put_back is sorted).
Status stage_one(StepFs& disk, int rootfd, int store_fd, const fs::path& root,
                 const std::string& staging, const StoredCopy& copy,
                 std::optional<std::string>& made) {
  const ManifestEntry& e = *copy.entry;
  std::string staged = join(staging, e.path);
  std::string parent = parent_of(e.path);
  if (parent != made) {
    VENVFIX_TRY(make_dirs_at(disk, rootfd, staging, parent, "", root));
    made = std::move(parent);
  }
  int error = 0;
  if (e.type == 'S') {
    error = disk.symlink(e.target, rootfd, staged);
  } else if (!copy.current && (copy.st.st_mode & 07777) != e.mode) {
    return copy_with_mode(disk, store_fd, copy.key, rootfd, staged, root, e.mode);
  } else {
    error = disk.link(rootfd, join(k_store_rel, copy.key), staged);
  }
  if (error != 0) {
    return make_error(ExitCode::error, "cannot stage {} for the restore: {}",
                      (root / e.path).string(), errno_message(error));
  }
  return ok();
}

// The staging tree: every path to put back, and every missing directory with its mode (set
// deepest first, after everything is in it).
Status stage(StepFs& disk, int rootfd, int store_fd, const fs::path& root,
             const std::string& staging, const EntryIndex& entries,
             const std::vector<StoredCopy>& copies, const StateDelta& delta) {
  std::optional<std::string> made;
  for (const StoredCopy& copy : copies) {
    VENVFIX_TRY(stage_one(disk, rootfd, store_fd, root, staging, copy, made));
  }
  for (const std::string& dir : delta.missing_dirs) {
    VENVFIX_TRY(make_dirs_at(disk, rootfd, staging, dir, "", root));
  }
  std::vector<std::string> dirs = delta.missing_dirs;
  std::sort(dirs.begin(), dirs.end(), std::greater<>());  // children sort after their parent
  for (const std::string& dir : dirs) {
    if (int error = disk.set_mode(rootfd, join(staging, dir), entries.at(dir)->mode); error != 0) {
      return make_error(ExitCode::error, "cannot set the mode of {}: {}",
                        (root / staging / dir).string(), errno_message(error));
    }
  }
  return ok();
}

// Every directory a staged name is in, up to .venvfix (which may have just gained staging/): the
// names a journal is about to refer to.
std::vector<std::string> staged_dirs(const std::string& staging,
                                     const std::vector<StoredCopy>& copies) {
  std::set<std::string> dirs = {".venvfix", parent_of(staging), staging};
  for (const StoredCopy& copy : copies) {
    for (std::string dir = parent_of(copy.entry->path); !dir.empty(); dir = parent_of(dir)) {
      if (!dirs.insert(join(staging, dir)).second) break;  // its ancestors are there already
    }
  }
  return {dirs.begin(), dirs.end()};
}

}  // namespace

Result<std::optional<std::string>> restore_from_store(const env::Venv& venv, const VenvLock& lock,
                                                      const Manifest& manifest,
                                                      const StateDelta& delta, KeepSnapshot keep,
                                                      StepFs& disk) {
  if (delta.put_back.empty() && delta.added_files.empty() && delta.added_dirs.empty() &&
      delta.missing_dirs.empty()) {
    return std::optional<std::string>();  // the venv is the snapshot's state: no transaction
  }
  EntryIndex entries;
  entries.reserve(delta.entries_to_restore.size());
  for (const ManifestEntry* e : delta.entries_to_restore) entries.emplace(e->path, e);
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  VENVFIX_TRY_ASSIGN(Fd root, open_root(venv));
  auto store = open_file(store_dir(venv), O_RDONLY | O_DIRECTORY);
  int store_fd = store ? store->get() : -1;  // no store: every stored file reads as missing
  const std::vector<StoredCopy> copies = look_up_store(store_fd, manifest, entries, delta.put_back);
  VENVFIX_TRY(check_store(venv, manifest, copies));
  const Clock::time_point checked = Clock::now();
  VENVFIX_TRY_ASSIGN(fs::path staging_dir, make_staging_dir(venv));
  std::string staging = staging_dir.lexically_relative(venv.root).string();
  auto staged = stage(disk, root.get(), store_fd, venv.root, staging, entries, copies, delta);
  const Clock::time_point linked = Clock::now();
  // The staged names must be durable before a journal refers to them: a move_in whose staged
  // name a power cut lost would read as done, and its undo would take the venv's file. Their
  // data is (the snapshot that linked them into the store ended with a syncfs; a copy was
  // fdatasync'ed above): fsyncs of their directories suffice. Not a syncfs, which would also
  // wait for whatever else is being written — right after a pip install, all of its files.
  if (staged && !delta.put_back.empty()) {
    staged = sync_dirs(disk, root.get(), venv.root, staged_dirs(staging, copies));
  }
  if (!staged) {
    (void)remove_tree_at(disk, root.get(), staging, venv.root);
    return std::move(staged).error();
  }
  ChangeSet changes;
  changes.reason = fmt::format("rollback to {}", manifest.id);
  changes.staging = staging_dir;
  changes.add = delta.put_back;
  changes.remove = delta.added_files;
  changes.remove.insert(changes.remove.end(), delta.changed.begin(), delta.changed.end());
  DirectoryChanges dirs;
  dirs.make = delta.missing_dirs;
  dirs.remove = delta.added_dirs;
  dirs.prune = DirectoryChanges::Prune::listed_only;
  dirs.staged_durable = true;
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  spdlog::debug(
      "restoring {} from the store: {} to put back, {} to remove, {} directories to "
      "make, {} to remove; store checked {:.1f} ms, staged {:.1f} ms, made durable {:.1f} ms",
      manifest.id, changes.add.size(), changes.remove.size(), dirs.make.size(), dirs.remove.size(),
      ms(start, checked), ms(checked, linked), ms(linked, Clock::now()));
  // Transaction::begin removes nothing it did not create: a refusal there leaves our staging.
  auto txn = Transaction::begin_consuming(venv, lock, changes, dirs, "", disk);
  if (!txn) {
    (void)remove_tree_at(disk, root.get(), staging, venv.root);
    return std::move(txn).error();
  }
  VENVFIX_TRY(txn->execute());
  return txn->commit(keep);
}

}  // namespace venvfix::txn
