#include "venvfix/base/file_lock.hpp"

#include <sys/file.h>

#include <cerrno>

namespace venvfix {

namespace {

int operation_of(FlockMode mode) {
  return mode == FlockMode::shared ? LOCK_SH : LOCK_EX;
}

Error lock_error(const fs::path& path, int error) {
  return make_error(ExitCode::error, "cannot lock {}: {}", path.string(), errno_message(error));
}

}  // namespace

Result<bool> try_flock(const Fd& fd, FlockMode mode, const fs::path& path) {
  if (::flock(fd.get(), operation_of(mode) | LOCK_NB) == 0) return true;
  if (errno == EWOULDBLOCK) return false;
  return lock_error(path, errno);
}

Status wait_flock(const Fd& fd, FlockMode mode, const fs::path& path) {
  while (::flock(fd.get(), operation_of(mode)) != 0) {
    if (errno != EINTR) return lock_error(path, errno);
  }
  return ok();
}

}  // namespace venvfix
