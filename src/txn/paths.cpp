#include "txn/paths.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace venvfix::txn {

bool is_safe_relative(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.back() == '/') return false;
  // memchr from one separator to the next rather than a test per character: a manifest checks
  // 30,000 paths of a dozen components.
  if (std::memchr(path.data(), '\0', path.size()) != nullptr) return false;
  for (std::size_t start = 0; start <= path.size();) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

bool is_state_path(std::string_view path) {
  return path == ".venvfix" || path.starts_with(".venvfix/");
}

bool is_safe_id(std::string_view id) {
  if (id.empty() || id.size() > 128 || id.front() == '.') return false;
  for (char c : id) {
    bool good = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_' || c == '.';
    if (!good) return false;
  }
  return true;
}

std::string parent_of(std::string_view path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string() : std::string(path.substr(0, slash));
}

std::string join(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  std::string out(a);
  out += '/';
  out += b;
  return out;
}

Result<std::optional<struct stat>> lstat_at(int dirfd, const std::string& path,
                                            const fs::path& root) {
  struct stat st {};
  if (::fstatat(dirfd, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    return std::optional<struct stat>(st);
  }
  if (errno == ENOENT || errno == ENOTDIR) return std::optional<struct stat>();
  return make_error(ExitCode::error, "{}: {}", (root / path).string(), errno_message(errno));
}

namespace {

Status make_one_dir(StepFs& disk, int dirfd, const std::string& dir, mode_t mode,
                    const fs::path& root) {
  if (int error = disk.make_dir(dirfd, dir, mode); error != 0) {
    if (error == EEXIST) return ok();
    return make_error(ExitCode::error, "cannot create {}: {}", (root / dir).string(),
                      errno_message(error));
  }
  // mkdir applies the umask; the mode must be exact.
  if (int error = disk.set_mode(dirfd, dir, mode); error != 0) {
    return make_error(ExitCode::error, "cannot set the mode of {}: {}", (root / dir).string(),
                      errno_message(error));
  }
  return ok();
}

}  // namespace

Status make_dirs_at(StepFs& disk, int dirfd, const std::string& base, const std::string& rel,
                    const std::string& mode_base, const fs::path& root) {
  std::string target = join(base, rel);
  struct stat st {};
  if (::fstatat(dirfd, target.c_str(), &st, 0) == 0 && S_ISDIR(st.st_mode)) return ok();
  if (!base.empty() && !(::fstatat(dirfd, base.c_str(), &st, 0) == 0 && S_ISDIR(st.st_mode))) {
    std::size_t at = 0;
    while (true) {
      at = base.find('/', at + 1);
      std::string prefix = base.substr(0, at);
      VENVFIX_TRY(make_one_dir(disk, dirfd, prefix, 0755, root));
      if (at == std::string::npos) break;
    }
  }
  if (rel.empty()) return ok();
  std::size_t at = 0;
  bool first = true;
  while (true) {
    at = rel.find('/', first ? 0 : at + 1);
    first = false;
    std::string prefix = rel.substr(0, at);
    mode_t mode = 0755;
    std::string source = join(mode_base, prefix);
    if (::fstatat(dirfd, source.c_str(), &st, 0) == 0 && S_ISDIR(st.st_mode)) {
      mode = st.st_mode & 07777;
    }
    VENVFIX_TRY(make_one_dir(disk, dirfd, join(base, prefix), mode, root));
    if (at == std::string::npos) break;
  }
  return ok();
}

Status remove_tree_at(StepFs& disk, int dirfd, const std::string& path, const fs::path& root) {
  if (int error = disk.remove(dirfd, path, StepFs::Remove::tree); error != 0) {
    return make_error(ExitCode::error, "cannot remove {}: {}", (root / path).string(),
                      errno_message(error));
  }
  return ok();
}

}  // namespace venvfix::txn
