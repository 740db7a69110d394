// run_parallel: an atomic job counter shared by the threads, a stop flag, the first error.
#include "venvfix/base/parallel.hpp"

#include <algorithm>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

namespace venvfix {

namespace {

class Pool {
 public:
  Pool(std::size_t count, const ParallelJob& job) : m_count(count), m_job(job) {}

  void work(std::size_t worker) {
    const JobContext context(worker, m_stop);
    for (;;) {
      if (m_stop.load(std::memory_order_relaxed)) return;
      const std::size_t index = m_next.fetch_add(1, std::memory_order_relaxed);
      if (index >= m_count) return;
      Status status = m_job(index, context);
      if (!status) {
        fail(std::move(status).error());
        return;
      }
    }
  }

  Status result() {
    if (m_failure) return std::move(*m_failure);
    return ok();
  }

 private:
  void fail(Error error) {
    std::lock_guard lock(m_mutex);
    if (!m_failure) m_failure = std::move(error);
    m_stop.store(true, std::memory_order_relaxed);
  }

  const std::size_t m_count;
  const ParallelJob& m_job;
  std::atomic<std::size_t> m_next{0};
  std::atomic<bool> m_stop{false};
  std::mutex m_mutex;
  std::optional<Error> m_failure;
};

}  // namespace

std::size_t parallel_workers(std::size_t count, std::size_t workers) {
  return std::min(count, std::max<std::size_t>(workers, 1));
}

Status run_parallel(std::size_t count, std::size_t workers, const ParallelJob& job) {
  Pool pool(count, job);
  const std::size_t threads = parallel_workers(count, workers);
  std::vector<std::thread> helpers;
  helpers.reserve(threads);
  for (std::size_t worker = 1; worker < threads; ++worker) {
    // std::thread reports a refused thread only by throwing; the threads there are (this one
    // included) then do the work.
    try {
      helpers.emplace_back([&pool, worker] { pool.work(worker); });
    } catch (const std::system_error&) {
      break;
    }
  }
  pool.work(0);
  for (std::thread& helper : helpers) helper.join();
  return pool.result();
}

}  // namespace venvfix
