#include "venvfix/base/sync_ahead.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace venvfix {

SyncAhead::SyncFunction SyncAhead::default_sync() {
  return [](int fd) { return ::fdatasync(fd) == 0 ? 0 : errno; };
}

SyncAhead::SyncAhead(SyncFunction sync) : m_sync(std::move(sync)), m_thread([this] { run(); }) {}

SyncAhead::~SyncAhead() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
    m_changed.notify_all();
  }
  m_thread.join();
}

void SyncAhead::add(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return;  // the writer's own sync will tell
  std::lock_guard lock(m_mutex);
  if (m_stop || m_failure) return;
  const bool waiting = std::any_of(m_queue.begin(), m_queue.end(), [&](const Pending& p) {
    return p.device == st.st_dev && p.inode == st.st_ino;
  });
  if (waiting) return;
  Fd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!copy.valid()) return;
  m_queue.push_back(Pending{std::move(copy), st.st_dev, st.st_ino, path});
  m_changed.notify_all();
}

Status SyncAhead::drain() {
  std::unique_lock lock(m_mutex);
  m_changed.wait(lock, [&] { return m_failure || (m_queue.empty() && !m_busy); });
  if (m_failure) return *m_failure;
  return ok();
}

void SyncAhead::run() {
  std::unique_lock lock(m_mutex);
  for (;;) {
    m_changed.wait(lock, [&] { return m_stop || !m_queue.empty(); });
    if (m_stop) return;
    std::vector<Pending> batch = std::exchange(m_queue, {});
    m_busy = true;
    lock.unlock();
    std::optional<Error> failure;
    for (const Pending& pending : batch) {
      if (m_stop) break;
      if (int error = m_sync(pending.fd.get()); error != 0) {
        failure =
            make_error(ExitCode::error, "{}: fdatasync: {}", pending.path, errno_message(error));
        break;
      }
    }
    batch.clear();  // closes the duplicates outside the lock
    lock.lock();
    m_busy = false;
    if (failure && !m_failure) m_failure = std::move(failure);
    if (m_failure) m_queue.clear();  // the writer gives up on these files anyway
    m_changed.notify_all();
  }
}

}  // namespace venvfix
