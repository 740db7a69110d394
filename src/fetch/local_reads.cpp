#include "local_reads.hpp"

#include <algorithm>
#include <system_error>
#include <utility>

namespace venvfix::fetch::detail {

LocalReads::LocalReads(std::size_t count, std::size_t threads, Read read,
                       std::function<void()> wake)
    : m_count(count), m_read(std::move(read)), m_wake(std::move(wake)) {
  const std::size_t wanted = std::clamp<std::size_t>(threads, 1, std::max<std::size_t>(count, 1));
  m_threads.reserve(wanted);  // the threads never touch the vector; reserved: no move either
  for (std::size_t t = 0; t < wanted; ++t) {
    try {
      m_threads.emplace_back([this](const std::stop_token& stop) { run(stop); });
    } catch (const std::system_error&) {  // at the limit of threads: fewer, or none (see below)
      break;
    }
  }
}

LocalReads::~LocalReads() {
  for (std::jthread& thread : m_threads) thread.request_stop();
  for (std::jthread& thread : m_threads) thread.join();
}

void LocalReads::run(const std::stop_token& stop) {
  for (;;) {
    std::size_t k = 0;
    {
      std::lock_guard lock(m_mutex);
      if (m_next == m_count || stop.stop_requested()) break;
      k = m_next++;
    }
    Status status = m_read(k, stop);
    {
      std::lock_guard lock(m_mutex);
      m_finished.push_back({k, std::move(status)});
    }
    m_changed.notify_all();
    m_wake();
  }
  std::lock_guard lock(m_mutex);
  ++m_threads_ended;  // also when stopped: wait_for_some must not wait for reads never begun
  m_changed.notify_all();
}

std::vector<LocalReads::Finished> LocalReads::take_finished() {
  std::lock_guard lock(m_mutex);
  return std::exchange(m_finished, {});
}

std::vector<LocalReads::Finished> LocalReads::wait_for_some() {
  if (m_threads.empty()) return read_here();
  std::unique_lock lock(m_mutex);
  m_changed.wait(lock, [&] { return !m_finished.empty() || m_threads_ended == m_threads.size(); });
  return std::exchange(m_finished, {});
}

std::vector<LocalReads::Finished> LocalReads::read_here() {
  if (m_next == m_count) return {};
  const std::size_t k = m_next++;
  std::vector<Finished> finished;
  finished.push_back({k, m_read(k, std::stop_token())});
  return finished;
}

}  // namespace venvfix::fetch::detail
