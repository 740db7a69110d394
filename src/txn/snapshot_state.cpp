#include "txn/snapshot_state.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>

#include "txn/paths.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {

namespace {

// Every entry under the root except .venvfix/, by venv-relative path.
Status walk(int dir_fd, const std::string& rel_dir, const fs::path& root,
            std::unordered_map<std::string, struct stat>& out) {
  int dup = ::dup(dir_fd);
  if (dup < 0) return make_error(ExitCode::error, "dup: {}", errno_message(errno));
  DIR* stream = ::fdopendir(dup);
  if (stream == nullptr) {
    ::close(dup);
    return make_error(ExitCode::error, "cannot read {}: {}", (root / rel_dir).string(),
                      errno_message(errno));
  }
  std::unique_ptr<DIR, int (*)(DIR*)> closer(stream, ::closedir);
  while (dirent* entry = ::readdir(stream)) {
    std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    std::string rel = join(rel_dir, name);
    if (rel == ".venvfix") continue;
    struct stat st {};
    if (::fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return make_error(ExitCode::error, "{}: {}", (root / rel).string(), errno_message(errno));
    }
    out.emplace(rel, st);
    if (S_ISDIR(st.st_mode)) {
      int sub = ::openat(dir_fd, entry->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
      if (sub < 0) {
        return make_error(ExitCode::error, "cannot read {}: {}", (root / rel).string(),
                          errno_message(errno));
      }
      Fd owned(sub);
      VENVFIX_TRY(walk(sub, rel, root, out));
    }
  }
  return ok();
}

// The venv still holds the snapshot's own inode, with the size and mtime recorded: nothing to
// restore. ctime is not compared: a link count change moves it without touching a byte, and
// the venv's files gain and lose links (an install from the unpacked-wheel cache links the
// same inode again, a cache entry goes away).
bool same_identity(const ManifestEntry& entry, const struct stat& st) {
  FileIdentity id = file_identity_from(st);
  return S_ISREG(st.st_mode) && id.device == entry.dev && id.inode == entry.ino &&
         id.size == entry.size && id.mtime_ns == entry.mtime_ns && (id.mode & 07777) == entry.mode;
}

Result<std::string> read_link_at(const fs::path& path) {
  std::error_code error;
  fs::path target = fs::read_symlink(path, error);
  if (error) return make_error(ExitCode::error, "{}: {}", path.string(), error.message());
  return target.string();
}

}  // namespace

Result<Manifest> load_manifest(const env::Venv& venv, const std::string& id) {
  if (!is_safe_id(id)) {
    return make_error(ExitCode::usage, "{} is not a snapshot id", id);
  }
  fs::path file = snapshots_dir(venv) / id / "manifest";
  if (::access(file.c_str(), F_OK) != 0) {
    return make_error(ExitCode::usage, "no snapshot {} in {}", id, snapshots_dir(venv).string());
  }
  VENVFIX_TRY_ASSIGN(std::string text, read_file(file, 1u << 30));
  return parse_manifest(text, file.string());
}

Result<StateDelta> compare_with_venv(const env::Venv& venv, const Manifest& manifest) {
  StateDelta delta;
  fs::path files = snapshots_dir(venv) / manifest.id / "files";
  if (manifest.kind == SnapshotKind::transaction) {
    for (const ManifestEntry& e : manifest.entries) {
      struct stat st {};
      bool present = ::lstat((venv.root / e.path).c_str(), &st) == 0;
      switch (e.type) {
        case 'A':
          if (present) delta.added_files.push_back(e.path);
          break;
        case 'C':
          if (present && S_ISDIR(st.st_mode)) delta.added_dirs.push_back(e.path);
          break;
        case 'D':
          if (!present) delta.missing_dirs.push_back(e.path);
          break;
        default:
          delta.put_back.push_back(e.path);
          if (present) delta.changed.push_back(e.path);
      }
    }
  } else {
    std::unordered_map<std::string, struct stat> now;
    VENVFIX_TRY_ASSIGN(Fd root, open_file(venv.root, O_RDONLY | O_DIRECTORY));
    VENVFIX_TRY(walk(root.get(), "", venv.root, now));
    for (const ManifestEntry& e : manifest.entries) {
      auto it = now.find(e.path);
      if (e.type == 'D') {
        if (it == now.end() || !S_ISDIR(it->second.st_mode)) delta.missing_dirs.push_back(e.path);
        if (it != now.end()) {
          if (!S_ISDIR(it->second.st_mode)) delta.added_files.push_back(e.path);
          now.erase(it);
        }
        continue;
      }
      if (e.type != 'F' && e.type != 'S') continue;
      if (it == now.end()) {
        delta.put_back.push_back(e.path);
        continue;
      }
      bool same = false;
      if (e.type == 'F') {
        same = same_identity(e, it->second);
      } else if (S_ISLNK(it->second.st_mode)) {
        // Version 2 keeps the target in the manifest, version 1 as a symlink under files/.
        std::string was = e.target;
        if (manifest.format < 2) {
          VENVFIX_TRY_ASSIGN(was, read_link_at(files / e.path));
        }
        VENVFIX_TRY_ASSIGN(std::string is, read_link_at(venv.root / e.path));
        same = was == is;
      }
      if (!same) {
        delta.put_back.push_back(e.path);
        if (S_ISDIR(it->second.st_mode)) {
          delta.added_dirs.push_back(e.path);
        } else {
          delta.changed.push_back(e.path);
        }
      }
      now.erase(it);
    }
    for (const auto& [path, st] : now) {
      if (S_ISDIR(st.st_mode))
        delta.added_dirs.push_back(path);
      else
        delta.added_files.push_back(path);
    }
  }
  for (auto* list : {&delta.added_files, &delta.added_dirs, &delta.put_back, &delta.changed,
                     &delta.missing_dirs}) {
    std::sort(list->begin(), list->end());
  }
  return delta;
}

}  // namespace venvfix::txn
