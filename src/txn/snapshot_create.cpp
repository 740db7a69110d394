// Whole-venv snapshots: a mirror of the tree under <venv>/.venvfix/snapshots/<id>/files made
// with reflink clones (FICLONE) where the filesystem supports them, else hard links; symlinks
// are recreated and directories made with the same modes. Everything goes through directory
// descriptors (*at() calls) so each entry costs one lookup in its own directory.
#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include <spdlog/spdlog.h>

#include "txn/manifest.hpp"
#include "txn/paths.hpp"
#include "venvfix/txn/journal.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {

namespace {

enum class Method { untried, reflink, hardlink };

struct Walker {
  fs::path root;  // for messages
  fs::path snapshot_files;
  Method method = Method::untried;
  Manifest manifest;

  Error error_at(const std::string& rel, std::string_view what, int error_number) const {
    return make_error(ExitCode::error, "cannot snapshot {}: {}: {}", (root / rel).string(), what,
                      errno_message(error_number));
  }

  // Clones src into dst (created); false when the filesystem cannot clone.
  Result<bool> try_reflink(int src_dir, int dst_dir, const char* name, mode_t mode,
                           const std::string& rel) {
    int in = ::openat(src_dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0) return error_at(rel, "open", errno);
    Fd in_fd(in);
    int out = ::openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
    if (out < 0) return error_at(rel, "create the clone", errno);
    Fd out_fd(out);
    if (::ioctl(out, FICLONE, in) != 0) {
      int saved = errno;
      ::unlinkat(dst_dir, name, 0);
      if (saved == EOPNOTSUPP || saved == ENOTTY || saved == EXDEV || saved == EINVAL ||
          saved == ENOSYS || saved == EPERM) {
        return false;
      }
      return error_at(rel, "clone", saved);
    }
    if (::fchmod(out, mode & 07777) != 0) return error_at(rel, "chmod the clone", errno);
    return true;
  }

  Status add_file(int src_dir, int dst_dir, const char* name, const struct stat& st,
                  const std::string& rel) {
    if (method != Method::hardlink) {
      VENVFIX_TRY_ASSIGN(bool cloned, try_reflink(src_dir, dst_dir, name, st.st_mode, rel));
      if (cloned) {
        method = Method::reflink;
        manifest.entries.push_back(entry_from_stat('F', st, rel));
        return ok();
      }
      if (method == Method::reflink) {
        return make_error(ExitCode::error, "cannot snapshot {}: the filesystem stopped cloning",
                          (root / rel).string());
      }
      method = Method::hardlink;
    }
    if (::linkat(src_dir, name, dst_dir, name, 0) != 0) return error_at(rel, "link", errno);
    // link(2) changes the inode's ctime: the identity is recorded after linking.
    struct stat linked {};
    if (::fstatat(dst_dir, name, &linked, AT_SYMLINK_NOFOLLOW) != 0) {
      return error_at(rel, "stat", errno);
    }
    manifest.entries.push_back(entry_from_stat('F', linked, rel));
    return ok();
  }

  Status walk(int src_dir, int dst_dir, const std::string& rel_dir) {
    int dup = ::dup(src_dir);
    if (dup < 0) return error_at(rel_dir, "dup", errno);
    DIR* stream = ::fdopendir(dup);
    if (stream == nullptr) {
      ::close(dup);
      return error_at(rel_dir, "read directory", errno);
    }
    std::unique_ptr<DIR, int (*)(DIR*)> closer(stream, ::closedir);
    while (dirent* entry = ::readdir(stream)) {
      const char* name = entry->d_name;
      std::string_view view = name;
      if (view == "." || view == "..") continue;
      std::string rel = join(rel_dir, view);
      if (rel == ".venvfix") continue;
      struct stat st {};
      if (::fstatat(src_dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return error_at(rel, "stat", errno);
      }
      if (S_ISREG(st.st_mode)) {
        VENVFIX_TRY(add_file(src_dir, dst_dir, name, st, rel));
      } else if (S_ISLNK(st.st_mode)) {
        std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
        ssize_t n = ::readlinkat(src_dir, name, target.data(), target.size());
        if (n < 0) return error_at(rel, "readlink", errno);
        target.resize(static_cast<std::size_t>(n));
        if (::symlinkat(target.c_str(), dst_dir, name) != 0) return error_at(rel, "symlink", errno);
        manifest.entries.push_back(entry_from_stat('S', st, rel));
      } else if (S_ISDIR(st.st_mode)) {
        mode_t mode = st.st_mode & 07777;
        // Owner access while filling it; the exact mode is set afterwards.
        if (::mkdirat(dst_dir, name, 0700) != 0) return error_at(rel, "mkdir", errno);
        manifest.entries.push_back(plain_entry('D', mode, rel));
        int sub_src = ::openat(src_dir, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (sub_src < 0) return error_at(rel, "open directory", errno);
        Fd sub_src_fd(sub_src);
        int sub_dst = ::openat(dst_dir, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (sub_dst < 0) return error_at(rel, "open directory", errno);
        Fd sub_dst_fd(sub_dst);
        VENVFIX_TRY(walk(sub_src, sub_dst, rel));
        if (::fchmod(sub_dst, mode) != 0) return error_at(rel, "chmod", errno);
      } else {
        spdlog::warn("not in the snapshot: {} (not a file, symlink or directory)",
                     (root / rel).string());
      }
    }
    return ok();
  }
};

}  // namespace

fs::path snapshots_dir(const env::Venv& venv) {
  return venv.state_dir() / "snapshots";
}

Result<SnapshotInfo> create_snapshot(const env::Venv& venv, const VenvLock& lock,
                                     std::string reason) {
  if (lock.venv_root() != venv.root) {
    return make_error(ExitCode::error, "internal error: the lock held is for {}, not {}",
                      lock.venv_root().string(), venv.root.string());
  }
  VENVFIX_TRY(require_no_unfinished_transaction(venv));
  auto start = std::chrono::steady_clock::now();
  fs::path base = snapshots_dir(venv);
  std::error_code error;
  fs::create_directories(base, error);
  if (error) {
    return make_error(ExitCode::error, "cannot create {}: {}", base.string(), error.message());
  }
  Walker walker;
  walker.root = venv.root;
  walker.manifest.id = new_id();
  walker.manifest.kind = SnapshotKind::tree;
  walker.manifest.created = utc_now_iso8601();
  walker.manifest.reason = std::move(reason);
  fs::path dir = base / walker.manifest.id;
  walker.snapshot_files = dir / "files";
  fs::create_directories(walker.snapshot_files, error);
  if (error) {
    return make_error(ExitCode::error, "cannot create {}: {}", dir.string(), error.message());
  }
  auto fail = [&](Error e) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
    return e;
  };
  {
    auto src = open_file(venv.root, O_RDONLY | O_DIRECTORY);
    if (!src) return fail(std::move(src).error());
    auto dst = open_file(walker.snapshot_files, O_RDONLY | O_DIRECTORY);
    if (!dst) return fail(std::move(dst).error());
    if (auto status = walker.walk(src->get(), dst->get(), ""); !status) {
      return fail(std::move(status).error());
    }
    // The manifest goes last: a snapshot without one is an interrupted creation (garbage).
    walker.manifest.method = walker.method == Method::reflink ? "reflink" : "hardlink";
    // One syncfs(2) makes every link and the manifest durable together.
    if (auto status = write_file_atomic(dir / "manifest", manifest_text(walker.manifest));
        !status) {
      return fail(std::move(status).error());
    }
    if (::syncfs(src->get()) != 0) {
      return fail(
          make_error(ExitCode::error, "{}: syncfs: {}", venv.root.string(), errno_message(errno)));
    }
  }
  SnapshotInfo info = walker.manifest.info();
  spdlog::debug(
      "snapshot {}: {} files, {} bytes, {} in {:.1f} ms", info.id, info.files, info.bytes,
      info.method,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return info;
}

}  // namespace venvfix::txn
