// Whole-venv snapshots, format 2: one pass over the venv records every path's identity in the
// manifest, and each regular file whose identity the link store (link_store.hpp) does not hold yet
// gets one hard link there. Directories and symlinks cost only their manifest line. So the first
// snapshot of a venv costs about a `cp -al` without its mkdirs, and every later one a stat pass
// plus a link per file that changed. Everything goes through directory descriptors (*at() calls),
// so each entry costs one lookup in its own directory.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include <spdlog/spdlog.h>

#include "txn/link_store.hpp"
#include "txn/manifest.hpp"
#include "txn/paths.hpp"
#include "venvfix/txn/journal.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {

namespace {

struct Walker {
  fs::path root;  // for messages
  int store_fd = -1;
  std::unordered_set<std::string> held;  // the store's names
  std::size_t linked = 0;                // links added to the store
  Manifest manifest;

  Error error_at(const std::string& rel, std::string_view what, int error_number) const {
    return make_error(ExitCode::error, "cannot snapshot {}: {}: {}", (root / rel).string(), what,
                      errno_message(error_number));
  }

  Status add_file(int src_dir, const char* name, const struct stat& st, const std::string& rel) {
    ManifestEntry entry = entry_from_stat('F', st, rel);
    std::string key = store_key(entry);
    if (!held.contains(key)) {
      if (::linkat(src_dir, name, store_fd, key.c_str(), 0) != 0 && errno != EEXIST) {
        return error_at(rel, "link it into the store", errno);
      }
      held.insert(std::move(key));
      ++linked;
    }
    manifest.entries.push_back(std::move(entry));
    return ok();
  }

  Status add_symlink(int src_dir, const char* name, const struct stat& st, const std::string& rel) {
    std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
    ssize_t n = ::readlinkat(src_dir, name, target.data(), target.size());
    if (n < 0) return error_at(rel, "readlink", errno);
    target.resize(static_cast<std::size_t>(n));
    ManifestEntry entry = entry_from_stat('S', st, rel);
    entry.size = target.size();
    entry.target = std::move(target);
    manifest.entries.push_back(std::move(entry));
    return ok();
  }

  Status walk(int src_dir, const std::string& rel_dir) {
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
        VENVFIX_TRY(add_file(src_dir, name, st, rel));
      } else if (S_ISLNK(st.st_mode)) {
        VENVFIX_TRY(add_symlink(src_dir, name, st, rel));
      } else if (S_ISDIR(st.st_mode)) {
        manifest.entries.push_back(plain_entry('D', st.st_mode & 07777, rel));
        int sub = ::openat(src_dir, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (sub < 0) return error_at(rel, "open directory", errno);
        Fd sub_fd(sub);
        VENVFIX_TRY(walk(sub, rel));
      } else {
        spdlog::warn("not in the snapshot: {} (not a file, symlink or directory)",
                     (root / rel).string());
      }
    }
    return ok();
  }
};

Status make_dir(const fs::path& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) {
    return make_error(ExitCode::error, "cannot create {}: {}", dir.string(), error.message());
  }
  return ok();
}

// Walks the venv into the store and writes the manifest into `dir`. The links are made durable
// (one syncfs) before the manifest, which goes last: a snapshot directory without a manifest is
// an interrupted creation (garbage), and store links no manifest references are dropped by the
// next `prune` or `delete`.
Status fill_snapshot(const env::Venv& venv, Walker& walker, const fs::path& dir) {
  VENVFIX_TRY_ASSIGN(Fd src, open_file(venv.root, O_RDONLY | O_DIRECTORY));
  VENVFIX_TRY_ASSIGN(Fd store, open_file(store_dir(venv), O_RDONLY | O_DIRECTORY));
  walker.store_fd = store.get();
  VENVFIX_TRY(walker.walk(src.get(), ""));
  if (::syncfs(src.get()) != 0) {
    return make_error(ExitCode::error, "{}: syncfs: {}", venv.root.string(), errno_message(errno));
  }
  return write_file_atomic(dir / "manifest", manifest_text(walker.manifest));
}

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
  VENVFIX_TRY(make_dir(store_dir(venv)));
  Walker walker;
  walker.root = venv.root;
  VENVFIX_TRY_ASSIGN(walker.held, store_names(venv));
  walker.manifest.id = new_id();
  walker.manifest.kind = SnapshotKind::tree;
  walker.manifest.created = utc_now_iso8601();
  walker.manifest.method = "hardlink";
  walker.manifest.reason = std::move(reason);
  fs::path dir = snapshots_dir(venv) / walker.manifest.id;
  VENVFIX_TRY(make_dir(dir));
  if (auto status = fill_snapshot(venv, walker, dir); !status) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
    return std::move(status).error();
  }
  SnapshotInfo info = walker.manifest.info();
  info.linked = walker.linked;
  spdlog::debug(
      "snapshot {}: {} files, {} bytes, {} new store links, in {:.1f} ms", info.id, info.files,
      info.bytes, info.linked,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return info;
}

}  // namespace venvfix::txn
