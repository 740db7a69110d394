#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <unordered_map>

#include "txn/manifest.hpp"
#include "txn/paths.hpp"
#include "txn/replay.hpp"
#include "txn/snapshot_state.hpp"

namespace venvfix::txn {

namespace {

Status clone_back(int rootfd, const fs::path& root, const std::string& from, const std::string& to,
                  mode_t mode) {
  int in = ::openat(rootfd, from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (in < 0) {
    return make_error(ExitCode::error, "{}: {}", (root / from).string(), errno_message(errno));
  }
  Fd in_fd(in);
  int out = ::openat(rootfd, to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode & 07777);
  if (out < 0) {
    return make_error(ExitCode::error, "{}: {}", (root / to).string(), errno_message(errno));
  }
  Fd out_fd(out);
  if (::ioctl(out, FICLONE, in) == 0) return ok();
  // A reflink snapshot copied to a filesystem that cannot clone (a golden example): copy the
  // few files a restore moved.
  for (;;) {
    ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, 1 << 30, 0);
    if (n == 0) return ok();
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ExitCode::error, "cannot copy {} into the snapshot: {}",
                        (root / from).string(), errno_message(errno));
    }
  }
}

}  // namespace

Status relink_snapshot(StepFs& disk, const env::Venv& venv, int rootfd, const Journal& journal) {
  const fs::path& root = venv.root;
  VENVFIX_TRY_ASSIGN(Manifest manifest, load_manifest(venv, journal.consumes));
  std::unordered_map<std::string, ManifestEntry*> by_path;
  for (ManifestEntry& e : manifest.entries) by_path.emplace(e.path, &e);
  std::string files = ".venvfix/snapshots/" + journal.consumes + "/files";
  bool changed = false;
  for (const Step& step : journal.steps) {
    if (step.op != StepOp::move_in) continue;
    auto it = by_path.find(step.path);
    if (it == by_path.end()) continue;
    ManifestEntry& entry = *it->second;
    std::string held = join(files, step.path);
    VENVFIX_TRY_ASSIGN(auto present, lstat_at(rootfd, held, root));
    VENVFIX_TRY_ASSIGN(auto in_venv, lstat_at(rootfd, step.path, root));
    if (!in_venv) {
      return make_error(ExitCode::error, "cannot keep snapshot {}: {} is gone", journal.consumes,
                        (root / step.path).string());
    }
    if (!present) {
      if (S_ISLNK(in_venv->st_mode)) {
        std::string target(static_cast<std::size_t>(in_venv->st_size) + 1, '\0');
        ssize_t n = ::readlinkat(rootfd, step.path.c_str(), target.data(), target.size());
        int error = n < 0
                        ? errno
                        : disk.symlink(target.substr(0, static_cast<std::size_t>(n)), rootfd, held);
        if (error != 0) {
          return make_error(ExitCode::error, "cannot keep {} in snapshot {}: {}",
                            (root / step.path).string(), journal.consumes, errno_message(error));
        }
      } else if (manifest.method == "reflink") {
        VENVFIX_TRY(clone_back(rootfd, root, step.path, held, in_venv->st_mode));
      } else if (int error = disk.link(rootfd, step.path, held); error != 0) {
        return make_error(ExitCode::error, "cannot keep {} in snapshot {}: {}",
                          (root / step.path).string(), journal.consumes, errno_message(error));
      }
    }
    // The identity the next restore compares against: the venv file's, after linking.
    VENVFIX_TRY_ASSIGN(auto now, lstat_at(rootfd, step.path, root));
    ManifestEntry fresh = entry_from_stat(entry.type, *now, entry.path);
    if (entry.type == 'S') fresh.mode = entry.mode;
    if (fresh.dev != entry.dev || fresh.ino != entry.ino || fresh.nlink != entry.nlink ||
        fresh.ctime_ns != entry.ctime_ns || fresh.mtime_ns != entry.mtime_ns) {
      entry = fresh;
      changed = true;
    }
  }
  if (!changed) return ok();
  return write_atomic(disk, venv.state_dir() / "snapshots" / journal.consumes / "manifest",
                      manifest_text(manifest));
}

}  // namespace venvfix::txn
