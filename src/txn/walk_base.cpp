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

namespace {

fs::path store_state_file(const env::Venv& venv) {
  return venv.state_dir() / "store-state";
}

// "walk-base DEV INO SIZE MTIME CTIME\nstore DEV INO MTIME CTIME\n". Walk-base's whole identity:
// while it matches, walk-base is the text this venvfix wrote (any write changes its ctime), so a
// snapshot may copy its lines unread.
std::string store_state_text(const FileIdentity& walk_base, const FileIdentity& store) {
  return fmt::format("walk-base {} {} {} {} {}\nstore {} {} {} {}\n", walk_base.device,
                     walk_base.inode, walk_base.size, walk_base.mtime_ns, walk_base.ctime_ns,
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

std::unique_ptr<WalkBase> WalkBase::load(const env::Venv& venv, int store_fd) {
  const fs::path file = walk_base_file(venv);
  auto identity = file_identity(file);
  if (!identity) return nullptr;
  auto text = map_manifest_file(file);
  if (!text) {
    spdlog::debug("not carrying directories over: {}", text.error().message);
    return nullptr;
  }
  Manifest header;
  auto start = parse_manifest_header(text->view(), file.string(), header);
  if (!start) {
    spdlog::debug("not carrying directories over: {}", start.error().message);
    return nullptr;
  }
  if (header.format < 3 || header.kind != SnapshotKind::tree || header.walked_ns <= 0) {
    return nullptr;
  }
  std::unique_ptr<WalkBase> base(new WalkBase(std::move(text).value(), std::move(header)));
  base->m_links_held = record_matches(venv, *identity, store_fd);
  if (!base->index(start->at, start->line, file.string())) return nullptr;
  return base;
}

bool WalkBase::index(std::size_t at, std::size_t line_number, std::string_view source) {
  const std::string_view text = m_text.view();
  std::vector<std::string_view> paths;  // each line's, unescaped
  m_lines.reserve(text.size() / 64);
  paths.reserve(text.size() / 64);
  for (; at < text.size(); ++line_number) {
    const std::size_t end = text.find('\n', at);
    const std::string_view line = text.substr(at, end - at);
    if (line.empty() && end != std::string_view::npos) {  // skipped, as parse_manifest does
      at = end + 1;
      continue;
    }
    EntryLineShape shape;
    bool good = end != std::string_view::npos && shape_of_entry_line(line, shape) &&
                std::string_view("FSDd").find(shape.type) != std::string_view::npos;
    WalkLine walk_line{.begin = static_cast<std::uint32_t>(at),
                       .length = static_cast<std::uint32_t>(end + 1 - at),
                       .type = shape.type == 'd' ? 'D' : shape.type,
                       .size = shape.size};
    std::string_view path = shape.raw_path;
    // Directory lines are read whole, and any line with an escape in its path (rare) or, where
    // walk-base may not be this venvfix's own text, every line: a bad one means no walk base.
    const bool escaped = path.find('%') != std::string_view::npos;
    if (good && (walk_line.type == 'D' || escaped || !m_links_held)) {
      auto entry = parse_entry(line, m_header);
      good = entry.has_value();
      if (good && walk_line.type == 'D') {
        walk_line.directory = static_cast<std::uint32_t>(m_directories.size());
        path = m_directories.emplace_back(std::move(entry).value()).path;
      } else if (good && escaped) {
        path = m_unescaped_paths.emplace_back(std::move(entry->path));
      }
    }
    if (!good) {
      spdlog::debug("not carrying directories over: {}, line {}: not an entry of a tree snapshot",
                    source, line_number);
      return false;
    }
    m_lines.push_back(walk_line);
    paths.push_back(path);
    at = end + 1;
  }
  group_children(paths);
  return true;
}

void WalkBase::group_children(const std::vector<std::string_view>& paths) {
  for (std::uint32_t d = 0; d < m_directories.size(); ++d) {
    m_dir_by_path.emplace(m_directories[d].path, d);
  }
  m_children.assign(m_directories.size() + 1, {});
  constexpr std::uint32_t k_no_slot = UINT32_MAX;
  std::string_view last_parent;
  std::uint32_t last_slot = 0;  // the root's
  for (std::uint32_t i = 0; i < m_lines.size(); ++i) {
    const std::size_t slash = paths[i].rfind('/');
    const std::string_view parent =
        slash == std::string_view::npos ? std::string_view() : paths[i].substr(0, slash);
    // Lines come in walk order: most have the previous line's parent.
    if (parent != last_parent) {
      auto it = m_dir_by_path.find(parent);
      last_slot = parent.empty() ? 0 : it == m_dir_by_path.end() ? k_no_slot : it->second + 1;
      last_parent = parent;
    }
    // A line whose directory the walk did not record can never be carried over.
    if (last_slot != k_no_slot) m_children[last_slot].push_back(i);
  }
}

Result<ManifestEntry> WalkBase::entry(const WalkLine& line) const {
  return parse_entry(text(line).substr(0, line.length - 1), m_header);
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
  auto it = m_dir_by_path.find(rel);
  if (it == m_dir_by_path.end()) return false;
  return directory_unchanged_since_walk(m_directories[it->second], m_header.walked_ns, st);
}

const std::vector<std::uint32_t>& WalkBase::children(const std::string& rel) const {
  static const std::vector<std::uint32_t> none;
  if (rel.empty()) return m_children[0];
  auto it = m_dir_by_path.find(rel);
  return it == m_dir_by_path.end() ? none : m_children[it->second + 1];
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
