#include "txn/walk_base.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

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
  if (::access(file.c_str(), F_OK) != 0) return nullptr;
  auto text = read_file(file, 1u << 30);
  auto manifest = text ? parse_manifest(*text, file.string()) : Result<Manifest>(text.error());
  if (!manifest) {
    spdlog::debug("not carrying directories over: {}", manifest.error().message);
    return nullptr;
  }
  if (manifest->format < 3 || manifest->kind != SnapshotKind::tree || manifest->walked_ns <= 0) {
    return nullptr;
  }
  return std::unique_ptr<WalkBase>(new WalkBase(std::move(manifest).value()));
}

bool WalkBase::unchanged(const std::string& rel, const struct stat& st) const {
  auto it = m_dirs.find(rel);
  if (it == m_dirs.end()) return false;
  const ManifestEntry& was = m_manifest.entries[it->second];
  FileIdentity now = file_identity_from(st);
  return was.ino != 0 && was.dev == now.device && was.ino == now.inode &&
         was.mtime_ns == now.mtime_ns && was.ctime_ns == now.ctime_ns &&
         std::max(was.mtime_ns, was.ctime_ns) < m_manifest.walked_ns;
}

const std::vector<std::uint32_t>& WalkBase::children(const std::string& rel) const {
  static const std::vector<std::uint32_t> none;
  auto it = m_children.find(rel);
  return it == m_children.end() ? none : it->second;
}

void remember_walk(const env::Venv& venv, const fs::path& manifest) {
  const fs::path base = walk_base_file(venv);
  const fs::path temporary = base.string() + ".tmp";
  (void)::unlink(temporary.c_str());
  if (::link(manifest.c_str(), temporary.c_str()) != 0 ||
      ::rename(temporary.c_str(), base.c_str()) != 0) {
    spdlog::debug("{}: not updated ({}); the next snapshot lists every directory", base.string(),
                  errno_message(errno));
    (void)::unlink(temporary.c_str());
    (void)::unlink(base.c_str());
  }
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
