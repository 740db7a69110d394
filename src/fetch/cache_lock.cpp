#include "venvfix/fetch/cache_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "venvfix/base/file_lock.hpp"
#include "venvfix/fetch/cache_layout.hpp"

namespace venvfix::fetch {

Result<CacheLock> CacheLock::acquire(const std::filesystem::path& cache_dir, Mode mode, Wait wait,
                                     const std::function<void()>& on_wait) {
  const std::filesystem::path path = cache_dir / cache_layout::lock;
  // O_CLOEXEC: a command the holder runs (a verify command, the venv's interpreter) must not
  // keep the cache locked after the holder exits.
  int opened = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (opened < 0 && (errno == EACCES || errno == EROFS)) {
    // A cache this user may only read (another user's, a read-only mount): flock needs no write
    // access, so its readers still keep that user's prune out.
    opened = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (opened < 0) {
    return make_error(ExitCode::error, "cannot lock {}: {}", path.string(), errno_message(errno));
  }
  Fd fd(opened);
  const FlockMode flock_mode = mode == Mode::shared ? FlockMode::shared : FlockMode::exclusive;
  VENVFIX_TRY_ASSIGN(bool taken, try_flock(fd, flock_mode, path));
  if (taken) return CacheLock(std::move(fd));
  if (wait == Wait::fail) {
    return make_error(ExitCode::locked,
                      "the cache {} is in use by another venvfix{}; try again when it has "
                      "finished, or pass --wait",
                      cache_dir.string(),
                      mode == Mode::exclusive ? " (an apply, plan or fetch)" : " (cache prune)");
  }
  if (on_wait) on_wait();
  VENVFIX_TRY(wait_flock(fd, flock_mode, path));
  return CacheLock(std::move(fd));
}

}  // namespace venvfix::fetch
