#include "local_reads.hpp"

#include <utility>

namespace venvfix::fetch::detail {

LocalReads::LocalReads(std::size_t count, Read read, std::function<void()> wake)
    : m_read(std::move(read)),
      m_wake(std::move(wake)),
      m_thread([this, count](const std::stop_token& stop) { run(stop, count); }) {}

LocalReads::~LocalReads() {
  m_thread.request_stop();
  m_thread.join();
}

void LocalReads::run(const std::stop_token& stop, std::size_t count) {
  for (std::size_t k = 0; k < count && !stop.stop_requested(); ++k) {
    Status status = m_read(k, stop);
    {
      std::lock_guard lock(m_mutex);
      m_finished.push_back({k, std::move(status)});
    }
    m_changed.notify_all();
    m_wake();
  }
  std::lock_guard lock(m_mutex);
  m_all_done = true;  // also when stopped: wait() must not wait for reads never begun
  m_changed.notify_all();
}

std::vector<LocalReads::Finished> LocalReads::take_finished() {
  std::lock_guard lock(m_mutex);
  return std::exchange(m_finished, {});
}

std::vector<LocalReads::Finished> LocalReads::wait() {
  std::unique_lock lock(m_mutex);
  m_changed.wait(lock, [&] { return m_all_done; });
  return std::exchange(m_finished, {});
}

}  // namespace venvfix::fetch::detail
