#include "txn/walk_base.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include <spdlog/spdlog.h>

namespace venvfix::txn {

fs::path walk_base_file(const env::Venv& venv) {
  return venv.state_dir() / "walk-base";
}

WalkBase::WalkBase(Manifest manifest) : m_manifest(std::move(manifest)) {
  m_children[""];  // the root always has an entry list, even an empty one
  for (std::uint32_t i = 0; i < m_manifest.entries.size(); ++i) {
    std::string_view path = m_manifest.entries[i].path;
    std::size_t slash = path.rfind('/');
    std::string_view parent = slash == std::string_view::npos ? "" : path.substr(0, slash);
    m_children[parent].push_back(i);
    if (m_manifest.entries[i].type == 'D') m_dirs.emplace(path, i);
  }
}

std::unique_ptr<WalkBase> WalkBase::load(const env::Venv& venv) {
  const fs::path file = walk_base_file(venv);
  auto identity = file_identity(file);
  if (!identity) return nullptr;
  auto manifest = read_manifest_file(file);
  if (!manifest) {
    spdlog::debug("not carrying directories over: {}", manifest.error().message);
    return nullptr;
  }
  if (manifest->format < 3 || manifest->kind != SnapshotKind::tree || manifest->walked_ns <= 0) {
    return nullptr;
  }
  std::unique_ptr<WalkBase> base(new WalkBase(std::move(manifest).value()));
  base->m_file = *identity;
  return base;
}

namespace {

fs::path store_state_file(const env::Venv& venv) {
  return venv.state_dir() / "store-state";
}

// "walk-base DEV INO\nstore DEV INO MTIME CTIME\n".
std::string store_state_text(const FileIdentity& walk_base, const FileIdentity& store) {
  return fmt::format("walk-base {} {}\nstore {} {} {} {}\n", walk_base.device, walk_base.inode,
                     store.device, store.inode, store.mtime_ns, store.ctime_ns);
}

bool write_unsynced(const fs::path& path, std::string_view data) {
  auto fd = open_file(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC);
  return fd && ::write(fd->get(), data.data(), data.size()) == static_cast<ssize_t>(data.size());
}

std::optional<FileIdentity> store_identity(int store_fd) {
  struct stat st {};
  if (store_fd < 0 || ::fstat(store_fd, &st) != 0) return std::nullopt;
  return file_identity_from(st);
}

}  // namespace

namespace {

// Whether the store-state record names walk-base as `walk_base` and the store as it is now.
bool record_matches(const env::Venv& venv, const FileIdentity& walk_base, int store_fd) {
  auto recorded = read_file(store_state_file(venv), 4096);
  auto store = store_identity(store_fd);
  return recorded && store && *recorded == store_state_text(walk_base, *store);
}

}  // namespace

bool WalkBase::links_held(const env::Venv& venv, int store_fd) const {
  return record_matches(venv, m_file, store_fd);
}

bool store_record_holds(const env::Venv& venv, int store_fd) {
  auto walk_base = file_identity(walk_base_file(venv));
  return walk_base && record_matches(venv, *walk_base, store_fd);
}

void remember_store(const env::Venv& venv, int store_fd) {
  const fs::path file = store_state_file(venv);
  auto walk_base = file_identity(walk_base_file(venv));
  auto store = store_identity(store_fd);
  if (!walk_base || !store) return;
  const fs::path temporary = file.string() + ".tmp";
  if (!write_unsynced(temporary, store_state_text(*walk_base, *store)) ||
      ::rename(temporary.c_str(), file.c_str()) != 0) {
    spdlog::debug("{}: not written; the next snapshot reads the store", file.string());
    (void)::unlink(temporary.c_str());
  }
}

Status forget_store(const env::Venv& venv) {
  const fs::path file = store_state_file(venv);
  if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
    return make_error(ExitCode::error, "cannot remove {}: {}", file.string(), errno_message(errno));
  }
  return ok();
}

bool directory_unchanged_since_walk(const ManifestEntry& was, std::int64_t walked_ns,
                                    const struct stat& now) {
  FileIdentity id = file_identity_from(now);
  return was.type == 'D' && was.ino != 0 && walked_ns > 0 && was.dev == id.device &&
         was.ino == id.inode && was.mtime_ns == id.mtime_ns && was.ctime_ns == id.ctime_ns &&
         std::max(was.mtime_ns, was.ctime_ns) < walked_ns;
}

bool WalkBase::unchanged(const std::string& rel, const struct stat& st) const {
  auto it = m_dirs.find(rel);
  if (it == m_dirs.end()) return false;
  return directory_unchanged_since_walk(m_manifest.entries[it->second], m_manifest.walked_ns, st);
}

const std::vector<std::uint32_t>& WalkBase::children(const std::string& rel) const {
  static const std::vector<std::uint32_t> none;
  auto it = m_children.find(rel);
  return it == m_children.end() ? none : it->second;
}

bool remember_walk(const env::Venv& venv, const fs::path& manifest) {
  const fs::path base = walk_base_file(venv);
  const fs::path temporary = base.string() + ".tmp";
  (void)::unlink(temporary.c_str());
  if (::link(manifest.c_str(), temporary.c_str()) != 0 ||
      ::rename(temporary.c_str(), base.c_str()) != 0) {
    spdlog::debug("{}: not updated ({}); the next snapshot lists every directory", base.string(),
                  errno_message(errno));
    (void)::unlink(temporary.c_str());
    (void)::unlink(base.c_str());
    return false;
  }
  return true;
}

Result<std::int64_t> filesystem_now(const env::Venv& venv) {
  const fs::path file = venv.state_dir() / "clock";
  VENVFIX_TRY_ASSIGN(Fd fd, open_file(file, O_WRONLY | O_CREAT | O_NOFOLLOW));
  struct stat st {};
  // The first fstat asks for the ctime, so that (on a filesystem with multigrain timestamps) the
  // touch gets a fine-grained one: later than any change made before it, not just its clock tick.
  if (::fstat(fd.get(), &st) != 0 || ::futimens(fd.get(), nullptr) != 0 ||
      ::fstat(fd.get(), &st) != 0) {
    return make_error(ExitCode::error, "cannot read the filesystem's clock from {}: {}",
                      file.string(), errno_message(errno));
  }
  return file_identity_from(st).ctime_ns;
}

}  // namespace venvfix::txn
