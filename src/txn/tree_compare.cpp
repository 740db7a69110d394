#include "txn/tree_compare.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <thread>
#include <unordered_map>

#include "txn/link_store.hpp"
#include "txn/paths.hpp"
#include "txn/walk_base.hpp"
#include "venvfix/base/dir_entries.hpp"
#include "venvfix/base/parallel.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {

namespace {

// A directory of the state and the manifest's entries directly in it.
struct StateDir {
  std::string rel;  // "" for the root
  std::vector<const ManifestEntry*> children;
  const ManifestEntry* self = nullptr;  // its D entry (none for the root)
};

// What a venv directory holds now: each name with what fstatat said, sorted by name.
using Listing = std::vector<std::pair<std::string, struct stat>>;

struct Context {
  const Manifest& manifest;
  const fs::path& root;
  int root_fd;
  fs::path files;  // format 1: the mirror holding symlinks
  KeepIdentities keep = KeepIdentities::no;
};

// Every directory of the state (each D entry, each parent of an entry, the root) with its entries.
std::vector<StateDir> state_dirs(const Manifest& manifest) {
  std::unordered_map<std::string_view, std::size_t> index;
  std::vector<StateDir> dirs;
  auto dir_of = [&](std::string_view rel) -> std::size_t {
    auto [it, inserted] = index.try_emplace(rel, dirs.size());
    if (inserted) dirs.push_back(StateDir{std::string(rel), {}});
    return it->second;
  };
  dir_of("");
  for (const ManifestEntry& e : manifest.entries) {
    if (e.type != 'F' && e.type != 'S' && e.type != 'D') continue;
    if (e.type == 'D') dirs[dir_of(e.path)].self = &e;
    std::size_t slash = e.path.rfind('/');
    std::string_view parent =
        slash == std::string::npos ? std::string_view() : std::string_view(e.path).substr(0, slash);
    dirs[dir_of(parent)].children.push_back(&e);
  }
  return dirs;
}

bool not_a_directory_there(int error) {
  return error == ENOENT || error == ENOTDIR || error == ELOOP;
}

// Directory `rel` opened from the root following no symlink: a component that became a symlink
// must not lead the comparison (and the restore's removals) out of the venv. One openat2(2) with
// RESOLVE_NO_SYMLINKS; where the kernel (before 5.6) or a seccomp filter refuses it, one openat
// per component with O_NOFOLLOW. nullopt when there is no directory there now.
Result<std::optional<Fd>> open_state_dir(const Context& c, const std::string& rel) {
  if (!rel.empty()) {
    struct open_how how {};
    how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
    Fd fd(static_cast<int>(::syscall(SYS_openat2, c.root_fd, rel.c_str(), &how, sizeof(how))));
    if (fd.valid()) return std::optional<Fd>(std::move(fd));
    if (not_a_directory_there(errno)) return std::optional<Fd>();
    if (errno != ENOSYS && errno != EPERM) {
      return make_error(ExitCode::error, "cannot read {}: {}", (c.root / rel).string(),
                        errno_message(errno));
    }
  }
  Fd fd(::dup(c.root_fd));
  if (!fd.valid()) return make_error(ExitCode::error, "dup: {}", errno_message(errno));
  for (std::size_t at = 0; at < rel.size();) {
    std::size_t end = std::min(rel.find('/', at), rel.size());
    const std::string component = rel.substr(at, end - at);
    Fd next(::openat(fd.get(), component.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid()) {
      if (not_a_directory_there(errno)) return std::optional<Fd>();
      return make_error(ExitCode::error, "cannot read {}: {}", (c.root / rel).string(),
                        errno_message(errno));
    }
    fd = std::move(next);
    at = end + 1;
  }
  return std::optional<Fd>(std::move(fd));
}

Result<Listing> list_dir(int fd, const std::string& rel, const fs::path& root) {
  Listing out;
  std::string failed;  // the entry whose fstatat failed
  int stat_error = 0;
  int error = for_each_dir_entry(fd, [&](const DirEntry& entry) {
    if (rel.empty() && std::string_view(entry.name) == ".venvfix") return true;
    struct stat st {};
    if (::fstatat(fd, entry.name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      stat_error = errno;
      failed = entry.name;
      return false;
    }
    out.emplace_back(std::string(entry.name), st);
    return true;
  });
  if (error != 0) {
    return make_error(ExitCode::error, "cannot read {}: {}", (root / rel).string(),
                      errno_message(error));
  }
  if (stat_error != 0) {
    return make_error(ExitCode::error, "{}: {}", (root / join(rel, failed)).string(),
                      errno_message(stat_error));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// Everything below a directory the state lacks: added.
Status add_subtree(int parent, const std::string& name, const std::string& rel,
                   const fs::path& root, StateDelta& out) {
  Fd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    return make_error(ExitCode::error, "cannot read {}: {}", (root / rel).string(),
                      errno_message(errno));
  }
  VENVFIX_TRY_ASSIGN(Listing listing, list_dir(fd.get(), rel, root));
  for (const auto& [child, st] : listing) {
    const std::string path = join(rel, child);
    if (!S_ISDIR(st.st_mode)) {
      out.added_files.push_back(path);
      continue;
    }
    out.added_dirs.push_back(path);
    VENVFIX_TRY(add_subtree(fd.get(), child, path, root, out));
  }
  return ok();
}

// The venv still holds the snapshot's own inode, with the size, mtime and mode recorded, or as
// it was when the snapshot was taken (an entry carried over from an earlier walk: link_store.hpp):
// nothing to restore. ctime is not compared otherwise: a link count change moves it without
// touching a byte, and the venv's files gain and lose links (an install from the unpacked-wheel
// cache links the same inode again, a cache entry goes away).
bool same_identity(const Manifest& manifest, const ManifestEntry& entry, const struct stat& st) {
  FileIdentity id = file_identity_from(st);
  if (!S_ISREG(st.st_mode) || id.device != entry.dev || id.inode != entry.ino) return false;
  return (id.size == entry.size && id.mtime_ns == entry.mtime_ns &&
          (id.mode & 07777) == entry.mode) ||
         unchanged_since_walk(manifest, entry, id);
}

Result<std::string> read_link(int dir, const std::string& name, const fs::path& shown) {
  std::string target(4096, '\0');
  ssize_t n = ::readlinkat(dir, name.c_str(), target.data(), target.size());
  if (n < 0) return make_error(ExitCode::error, "{}: {}", shown.string(), errno_message(errno));
  target.resize(static_cast<std::size_t>(n));
  return target;
}

// A symlink of the state against the venv's symlink `name` in `dir`. Version 2+ keeps the target
// in the manifest, version 1 as a symlink under files/.
Result<bool> same_symlink(const Context& c, const ManifestEntry& e, int dir,
                          const std::string& name) {
  std::string was = e.target;
  if (c.manifest.format < 2) {
    VENVFIX_TRY_ASSIGN(was, read_link(AT_FDCWD, (c.files / e.path).string(), c.files / e.path));
  }
  VENVFIX_TRY_ASSIGN(std::string is, read_link(dir, name, c.root / e.path));
  return was == is;
}

// One entry of the state against what the venv has under its name (`now`: null when nothing).
Status compare_entry(const Context& c, const ManifestEntry& e, int dir, const std::string& name,
                     const struct stat* now, StateDelta& out) {
  if (e.type == 'D') {
    if (now == nullptr || !S_ISDIR(now->st_mode)) {
      out.missing_dirs.push_back(e.path);
      out.entries_to_restore.push_back(&e);
    }
    if (now != nullptr && !S_ISDIR(now->st_mode)) out.added_files.push_back(e.path);
    return ok();
  }
  if (now == nullptr) {
    out.put_back.push_back(e.path);
    out.entries_to_restore.push_back(&e);
    return ok();
  }
  bool same = false;
  if (e.type == 'F') {
    same = same_identity(c.manifest, e, *now);
    if (c.keep == KeepIdentities::yes && S_ISREG(now->st_mode)) {
      out.files_seen.emplace_back(&e, file_identity_from(*now));
    }
  } else if (S_ISLNK(now->st_mode)) {
    VENVFIX_TRY_ASSIGN(same, same_symlink(c, e, dir, name));
  }
  if (same) return ok();
  out.put_back.push_back(e.path);
  out.entries_to_restore.push_back(&e);
  if (!S_ISDIR(now->st_mode)) {
    out.changed.push_back(e.path);
    return ok();
  }
  out.added_dirs.push_back(e.path);
  return add_subtree(dir, name, e.path, c.root, out);
}

// A directory unchanged since the snapshot's walk (walk_base.hpp) still has exactly the names the
// manifest lists in it, with the same inodes: it is not read, nothing in it can be new, and each
// entry costs one fstatat by name. That stat stays: a file written in place changes the file,
// not its directory.
Status compare_unchanged_dir(const Context& c, const StateDir& d, int fd, std::size_t skip,
                             StateDelta& out) {
  for (const ManifestEntry* e : d.children) {
    const std::string name = e->path.substr(skip);
    struct stat st {};
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      VENVFIX_TRY(compare_entry(c, *e, fd, name, &st, out));
    } else if (errno == ENOENT) {  // removed since the directory's fstat
      VENVFIX_TRY(compare_entry(c, *e, fd, name, nullptr, out));
    } else {
      return make_error(ExitCode::error, "{}: {}", (c.root / e->path).string(),
                        errno_message(errno));
    }
  }
  return ok();
}

// One directory of the state: its entries one by one, then what the venv has beyond them.
Status compare_dir(const Context& c, const StateDir& d, StateDelta& out) {
  VENVFIX_TRY_ASSIGN(std::optional<Fd> fd, open_state_dir(c, d.rel));
  const std::size_t skip = d.rel.empty() ? 0 : d.rel.size() + 1;
  if (!fd) {  // gone (its parent's job says so): every entry in it is gone too
    for (const ManifestEntry* e : d.children) {
      VENVFIX_TRY(compare_entry(c, *e, -1, e->path.substr(skip), nullptr, out));
    }
    return ok();
  }
  struct stat st {};
  if (d.self != nullptr && ::fstat(fd->get(), &st) == 0 &&
      directory_unchanged_since_walk(*d.self, c.manifest.walked_ns, st)) {
    ++out.dirs_unchanged;
    return compare_unchanged_dir(c, d, fd->get(), skip, out);
  }
  ++out.dirs_read;
  VENVFIX_TRY_ASSIGN(Listing now, list_dir(fd->get(), d.rel, c.root));
  std::vector<bool> seen(now.size(), false);
  for (const ManifestEntry* e : d.children) {
    const std::string name = e->path.substr(skip);
    auto it =
        std::lower_bound(now.begin(), now.end(), name,
                         [](const auto& entry, const std::string& n) { return entry.first < n; });
    const bool found = it != now.end() && it->first == name;
    if (found) seen[static_cast<std::size_t>(it - now.begin())] = true;
    VENVFIX_TRY(compare_entry(c, *e, fd->get(), name, found ? &it->second : nullptr, out));
  }
  for (std::size_t i = 0; i < now.size(); ++i) {
    if (seen[i]) continue;
    const std::string path = join(d.rel, now[i].first);
    if (!S_ISDIR(now[i].second.st_mode)) {
      out.added_files.push_back(path);
      continue;
    }
    out.added_dirs.push_back(path);
    VENVFIX_TRY(add_subtree(fd->get(), now[i].first, path, c.root, out));
  }
  return ok();
}

}  // namespace

Result<StateDelta> compare_tree(const env::Venv& venv, const Manifest& manifest,
                                KeepIdentities keep) {
  VENVFIX_TRY_ASSIGN(Fd root, open_file(venv.root, O_RDONLY | O_DIRECTORY));
  const Context context{manifest, venv.root, root.get(),
                        snapshots_dir(venv) / manifest.id / "files", keep};
  const std::vector<StateDir> dirs = state_dirs(manifest);
  std::vector<StateDelta> parts(dirs.size());
  VENVFIX_TRY(run_parallel(
      dirs.size(), std::max(1u, std::thread::hardware_concurrency()),
      [&](std::size_t i, const JobContext&) { return compare_dir(context, dirs[i], parts[i]); }));
  StateDelta delta;
  for (StateDelta& part : parts) {
    for (auto [to, from] :
         {std::pair{&delta.added_files, &part.added_files},
          std::pair{&delta.added_dirs, &part.added_dirs},
          std::pair{&delta.put_back, &part.put_back}, std::pair{&delta.changed, &part.changed},
          std::pair{&delta.missing_dirs, &part.missing_dirs}}) {
      to->insert(to->end(), std::make_move_iterator(from->begin()),
                 std::make_move_iterator(from->end()));
    }
    delta.dirs_read += part.dirs_read;
    delta.dirs_unchanged += part.dirs_unchanged;
    delta.entries_to_restore.insert(delta.entries_to_restore.end(), part.entries_to_restore.begin(),
                                    part.entries_to_restore.end());
    delta.files_seen.insert(delta.files_seen.end(), part.files_seen.begin(), part.files_seen.end());
  }
  return delta;
}

}  // namespace venvfix::txn
