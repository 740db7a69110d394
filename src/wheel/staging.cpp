#include "wheel/staging.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "wheel/member_stream.hpp"

namespace venvfix::wheel::detail {

Result<Staging> Staging::open(const fs::path& dir, mode_t umask) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return make_error(ExitCode::error, "staging directory {}: {}", dir.string(),
                      errno_message(errno));
  }
  return Staging(Fd(fd), dir, umask);
}

Staging::~Staging() {
  if (m_committed || !m_fd.valid()) return;
  for (auto it = m_files.rbegin(); it != m_files.rend(); ++it) {
    ::unlinkat(m_fd.get(), it->c_str(), 0);
  }
  for (auto it = m_dirs.rbegin(); it != m_dirs.rend(); ++it) {
    ::unlinkat(m_fd.get(), it->c_str(), AT_REMOVEDIR);
  }
}

Status Staging::ensure_parents(const std::string& rel) {
  for (std::size_t slash = rel.find('/'); slash != std::string::npos;
       slash = rel.find('/', slash + 1)) {
    std::string dir = rel.substr(0, slash);
    if (m_known_dirs.count(dir) != 0) continue;
    if (::mkdirat(m_fd.get(), dir.c_str(), 0777 & ~m_umask) == 0) {
      m_dirs.push_back(dir);
    } else if (errno == EEXIST) {
      // Something already there: only a real directory will do (a symlink could lead out).
      struct stat st {};
      if (::fstatat(m_fd.get(), dir.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
          !S_ISDIR(st.st_mode)) {
        return make_error(ExitCode::error,
                          "{} exists in the staging directory and is not a "
                          "directory",
                          describe(dir));
      }
    } else {
      return make_error(ExitCode::error, "{}: {}", describe(dir), errno_message(errno));
    }
    m_known_dirs.insert(std::move(dir));
  }
  return ok();
}

Result<Fd> Staging::create(const std::string& rel, mode_t mode) {
  {
    std::lock_guard lock(*m_mutex);
    VENVFIX_TRY(ensure_parents(rel));
  }
  int fd =
      ::openat(m_fd.get(), rel.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    return make_error(ExitCode::error, "{}: {}", describe(rel), errno_message(errno));
  }
  {
    std::lock_guard lock(*m_mutex);
    m_files.push_back(rel);
  }
  Fd owned(fd);
  if (::fchmod(owned.get(), mode) != 0) {
    return make_error(ExitCode::error, "{}: {}", describe(rel), errno_message(errno));
  }
  return owned;
}

Status Staging::link(const std::string& rel, const fs::path& target) {
  {
    std::lock_guard lock(*m_mutex);
    VENVFIX_TRY(ensure_parents(rel));
  }
  if (::linkat(AT_FDCWD, target.c_str(), m_fd.get(), rel.c_str(), 0) != 0) {
    return make_error(ExitCode::error, "cannot link {} to {}: {}", describe(rel), target.string(),
                      errno_message(errno));
  }
  std::lock_guard lock(*m_mutex);
  m_files.push_back(rel);
  return ok();
}

Status Staging::adopt(const std::string& rel, const fs::path& file, mode_t mode) {
  {
    std::lock_guard lock(*m_mutex);
    VENVFIX_TRY(ensure_parents(rel));
  }
  if (::renameat2(AT_FDCWD, file.c_str(), m_fd.get(), rel.c_str(), RENAME_NOREPLACE) != 0) {
    return make_error(ExitCode::error, "cannot move {} to {}: {}", file.string(), describe(rel),
                      errno_message(errno));
  }
  {
    std::lock_guard lock(*m_mutex);
    m_files.push_back(rel);
  }
  if (::fchmodat(m_fd.get(), rel.c_str(), mode, 0) != 0) {
    return make_error(ExitCode::error, "{}: {}", describe(rel), errno_message(errno));
  }
  return ok();
}

Status Staging::rewrite(const std::string& rel, std::string_view data) {
  int fd = ::openat(m_fd.get(), rel.c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return make_error(ExitCode::error, "{}: {}", describe(rel), errno_message(errno));
  Fd owned(fd);
  return write_all(owned.get(), std::as_bytes(std::span(data.data(), data.size())), describe(rel));
}

Result<std::string> Staging::read(const std::string& rel) const {
  int fd = ::openat(m_fd.get(), rel.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return make_error(ExitCode::error, "{}: {}", describe(rel), errno_message(errno));
  Fd owned(fd);
  std::string out;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(owned.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(ExitCode::error, "{}: {}", describe(rel), errno_message(errno));
    if (n == 0) return out;
    out.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace venvfix::wheel::detail
