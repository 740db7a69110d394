#include "stream_hasher.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "venvfix/base/fs.hpp"

namespace venvfix::fetch::detail {

namespace {
constexpr std::size_t k_chunk = 1u << 20;
constexpr std::uint64_t k_wake_every = 256u << 10;
}  // namespace

StreamHasher::StreamHasher(int fd) : m_fd(fd), m_buffer(k_chunk) {
  try {
    m_thread = std::thread([this] { run(); });
  } catch (const std::system_error&) {  // at the limit of threads: finish() reads it all back
  }
}

StreamHasher::~StreamHasher() {
  if (!m_thread.joinable()) return;
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_one();
  m_thread.join();
}

void StreamHasher::advance(std::uint64_t written) {
  if (written - m_notified < k_wake_every) return;
  m_notified = written;
  {
    std::lock_guard lock(m_mutex);
    m_target = written;
  }
  m_wake.notify_one();
}

void StreamHasher::reset() {
  std::unique_lock lock(m_mutex);
  ++m_generation;
  m_idle.wait(lock, [this] { return !m_busy; });
  (void)m_sha.finish();
  m_target = m_hashed = m_notified = 0;
  m_error.reset();
}

Result<std::string> StreamHasher::finish(std::uint64_t written) {
  if (!m_thread.joinable()) return finish_here(written);
  std::unique_lock lock(m_mutex);
  m_target = written;
  m_wake.notify_one();
  m_idle.wait(lock, [&] { return (m_hashed >= written && !m_busy) || m_error.has_value(); });
  if (m_error) return Error{ExitCode::error, *m_error};
  std::string hex = to_hex(m_sha.finish());
  ++m_generation;
  m_target = m_hashed = m_notified = 0;
  return hex;
}

void StreamHasher::run() {
  std::unique_lock lock(m_mutex);
  for (;;) {
    m_wake.wait(lock, [this] { return m_stop || (m_hashed < m_target && !m_error); });
    if (m_stop) return;
    std::uint64_t from = m_hashed;
    std::size_t length =
        static_cast<std::size_t>(std::min<std::uint64_t>(m_target - from, k_chunk));
    std::uint64_t generation = m_generation;
    m_busy = true;
    lock.unlock();
    // Outside the lock: the transfer thread keeps writing meanwhile.
    const int read_error = hash_back(from, length);
    lock.lock();
    m_busy = false;
    if (generation == m_generation) {
      if (read_error != 0) {
        m_error = "cannot read back a download to hash it: " + errno_message(read_error);
      } else {
        m_hashed = from + length;
      }
    }
    m_idle.notify_all();
  }
}

int StreamHasher::hash_back(std::uint64_t from, std::size_t length) {
  std::size_t done = 0;
  while (done < length) {
    const ssize_t got =
        ::pread(m_fd, m_buffer.data() + done, length - done, static_cast<off_t>(from + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return got < 0 ? errno : EIO;
    done += static_cast<std::size_t>(got);
  }
  m_sha.update(std::string_view(m_buffer.data(), length));
  return 0;
}

Result<std::string> StreamHasher::finish_here(std::uint64_t written) {
  while (m_hashed < written) {
    const auto length =
        static_cast<std::size_t>(std::min<std::uint64_t>(written - m_hashed, k_chunk));
    if (const int read_error = hash_back(m_hashed, length); read_error != 0) {
      return Error{ExitCode::error,
                   "cannot read back a download to hash it: " + errno_message(read_error)};
    }
    m_hashed += length;
  }
  std::string hex = to_hex(m_sha.finish());
  m_target = m_hashed = m_notified = 0;
  return hex;
}

}  // namespace venvfix::fetch::detail
