#include "txn/replay.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "txn/paths.hpp"
#include "venvfix/base/parallel.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {

namespace {

Error rename_error(const fs::path& root, const std::string& from, const std::string& to,
                   int error_number) {
  return make_error(ExitCode::error, "cannot move {} to {}: {}", (root / from).string(),
                    (root / to).string(), errno_message(error_number));
}

Status rename_at(StepFs& disk, int rootfd, const fs::path& root, const std::string& from,
                 const std::string& to) {
  if (int error = disk.rename(rootfd, from, to); error != 0) {
    return rename_error(root, from, to, error);
  }
  return ok();
}

// mkdir with an exact mode (mkdir applies the umask); an existing directory is not an error.
Status make_dir_exactly(StepFs& disk, int rootfd, const fs::path& root, const Step& step,
                        std::string_view verb) {
  if (int error = disk.make_dir(rootfd, step.path, step.mode); error != 0) {
    if (error == EEXIST) return ok();
    return make_error(ExitCode::error, "cannot {} {}: {}", verb, (root / step.path).string(),
                      errno_message(error));
  }
  if (int error = disk.set_mode(rootfd, step.path, step.mode); error != 0) {
    return make_error(ExitCode::error, "cannot set the mode of {}: {}", (root / step.path).string(),
                      errno_message(error));
  }
  return ok();
}

bool exists_at(int rootfd, const std::string& path) {
  struct stat st {};
  return ::fstatat(rootfd, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

void join_errors(std::string& all, const Error& error) {
  if (!all.empty()) all += "; ";
  all += error.message;
}

}  // namespace

Result<Fd> open_root(const env::Venv& venv) {
  return open_file(venv.root, O_RDONLY | O_DIRECTORY);
}

Status run_step(StepFs& disk, int rootfd, const fs::path& root, const Journal& journal,
                const Step& step) {
  switch (step.op) {
    case StepOp::make_dir:
      return make_dir_exactly(disk, rootfd, root, step, "create");
    case StepOp::move_out: {
      std::string files = journal.snapshot_files();
      VENVFIX_TRY(make_dirs_at(disk, rootfd, files, parent_of(step.path), "", root));
      return rename_at(disk, rootfd, root, step.path, join(files, step.path));
    }
    case StepOp::move_in:
      return rename_at(disk, rootfd, root, join(journal.staging, step.path), step.path);
    case StepOp::prune_dir:
      if (int error = disk.remove(rootfd, step.path, StepFs::Remove::empty_dir); error != 0) {
        if (error == ENOENT) return ok();
        if (error == ENOTEMPTY || error == EEXIST) {
          // Something appeared in it since begin(): keeping the directory is right, and undo
          // sees it present and leaves it.
          spdlog::debug("kept {}: not empty", (root / step.path).string());
          return ok();
        }
        return make_error(ExitCode::error, "cannot remove the directory {}: {}",
                          (root / step.path).string(), errno_message(error));
      }
      return ok();
  }
  return ok();
}

Status sync_touched_dirs(StepFs& disk, int rootfd, const fs::path& root, const Journal& journal) {
  std::set<std::string> dirs;
  std::string files = journal.snapshot_files();
  for (const Step& step : journal.steps) {
    std::string parent = parent_of(step.path);
    dirs.insert(parent);
    if (step.op == StepOp::move_out) dirs.insert(join(files, parent));
    if (step.op == StepOp::move_in) dirs.insert(join(journal.staging, parent));
    if (step.op == StepOp::make_dir) dirs.insert(step.path);
  }
  return sync_dirs(disk, rootfd, root, std::vector<std::string>(dirs.begin(), dirs.end()));
}

Status sync_dirs(StepFs& disk, int rootfd, const fs::path& root,
                 const std::vector<std::string>& dirs) {
  const std::size_t threads = std::min<std::size_t>(8, (dirs.size() + 7) / 8);
  return run_parallel(dirs.size(), threads, [&](std::size_t i, const JobContext&) -> Status {
    int error = disk.sync(rootfd, dirs[i], StepFs::Sync::directory);
    if (error == ENOENT || error == 0) return ok();  // ENOENT: pruned, or never needed
    return make_error(ExitCode::error, "{}: fsync: {}", (root / dirs[i]).string(),
                      errno_message(error));
  });
}

namespace {

// Undoes one step if it happened.
Status undo_step(StepFs& disk, int rootfd, const fs::path& root, const Journal& journal,
                 const Step& step) {
  switch (step.op) {
    case StepOp::prune_dir:
      if (exists_at(rootfd, step.path)) return ok();
      return make_dir_exactly(disk, rootfd, root, step, "recreate");
    case StepOp::move_in: {
      std::string staged = join(journal.staging, step.path);
      if (exists_at(rootfd, staged)) return ok();      // not done
      if (!exists_at(rootfd, step.path)) return ok();  // cannot happen without outside help
      return rename_at(disk, rootfd, root, step.path, staged);
    }
    case StepOp::move_out: {
      std::string kept = join(journal.snapshot_files(), step.path);
      if (!exists_at(rootfd, kept)) return ok();  // not done
      if (exists_at(rootfd, step.path)) {
        return make_error(ExitCode::error,
                          "cannot put {} back: something else was created at its place",
                          (root / step.path).string());
      }
      return rename_at(disk, rootfd, root, kept, step.path);
    }
    case StepOp::make_dir: {
      if (!exists_at(rootfd, step.path)) return ok();
      int error = disk.remove(rootfd, step.path, StepFs::Remove::empty_dir);
      if (error != 0 && error != ENOENT) {
        return make_error(ExitCode::error, "cannot remove the directory {}: {}",
                          (root / step.path).string(), errno_message(error));
      }
      return ok();
    }
  }
  return ok();
}

Status remove_snapshot_dir(StepFs& disk, int rootfd, const fs::path& root, const std::string& id) {
  return remove_tree_at(disk, rootfd, ".venvfix/snapshots/" + id, root);
}

// A commit marker renamed into place whose directory fsync then failed (commit() reported the
// error and the transaction is rolled back): it goes first, durably, so that a crash during the
// undo is not "finished" into a mix by the next recover.
Status remove_commit_marker(StepFs& disk, const env::Venv& venv) {
  fs::path marker = commit_marker(venv);
  int error = disk.remove(AT_FDCWD, marker.string(), StepFs::Remove::file);
  if (error == ENOENT) return ok();
  if (error == 0) error = disk.sync(AT_FDCWD, journal_dir(venv).string(), StepFs::Sync::directory);
  if (error != 0) {
    return make_error(ExitCode::error, "cannot remove {}: {}", marker.string(),
                      errno_message(error));
  }
  return ok();
}

}  // namespace

Status undo_journal(StepFs& disk, const env::Venv& venv, int rootfd, const Journal& journal) {
  const fs::path& root = venv.root;
  VENVFIX_TRY(remove_commit_marker(disk, venv));
  std::string errors;
  for (auto it = journal.steps.rbegin(); it != journal.steps.rend(); ++it) {
    if (auto status = undo_step(disk, rootfd, root, journal, *it); !status) {
      join_errors(errors, status.error());
    }
  }
  if (!errors.empty()) {
    // Keep the journal: the next `recover` tries again once the cause is fixed.
    return make_error(ExitCode::error, "roll back of {} incomplete: {}", journal.reason, errors);
  }
  VENVFIX_TRY(sync_touched_dirs(disk, rootfd, root, journal));
  // The undo is durable. The journal goes first: once it is gone nothing may be replayed
  // (with the staging directory gone, "move_in done" could no longer be decided). A manifest
  // written by a commit that never got its marker goes before it, so that no snapshot of a
  // rolled back transaction is ever listed; the empty directories left are garbage that
  // `recover` and `snapshot prune` remove.
  std::string manifest = ".venvfix/snapshots/" + journal.id + "/manifest";
  int error = disk.remove(rootfd, manifest, StepFs::Remove::file);
  if (error != 0 && error != ENOENT) {
    return make_error(ExitCode::error, "cannot remove {}: {}", (root / manifest).string(),
                      errno_message(error));
  }
  VENVFIX_TRY(remove_journal(disk, venv));
  VENVFIX_TRY(remove_snapshot_dir(disk, rootfd, root, journal.id));
  if (journal.staging_owned) VENVFIX_TRY(remove_tree_at(disk, rootfd, journal.staging, root));
  return ok();
}

Status finish_journal(StepFs& disk, const env::Venv& venv, int rootfd, const Journal& journal,
                      KeepSnapshot keep) {
  const fs::path& root = venv.root;
  if (journal.staging_owned) VENVFIX_TRY(remove_tree_at(disk, rootfd, journal.staging, root));
  if (keep == KeepSnapshot::no) VENVFIX_TRY(remove_snapshot_dir(disk, rootfd, root, journal.id));
  if (journal.relink) {
    VENVFIX_TRY(relink_snapshot(disk, venv, rootfd, journal));
  } else if (!journal.consumes.empty()) {
    VENVFIX_TRY(remove_snapshot_dir(disk, rootfd, root, journal.consumes));
  }
  return remove_journal(disk, venv);
}

}  // namespace venvfix::txn
