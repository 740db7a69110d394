// A bounded worker pool: N jobs on up to W threads, stopping at the first error.
//
// The one pool of venvfix (staging, wheel unpacking, file checks). Jobs are handed out in index
// order, one at a time, so a job that must run first (a producer the others wait on) can be
// job 0. Results go wherever the job writes them by index; the pool only says whether all
// succeeded.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>

#include "venvfix/base/result.hpp"

namespace venvfix {

// What a running job may ask the pool.
class JobContext {
 public:
  JobContext(std::size_t worker, const std::atomic<bool>& stop) : m_worker(worker), m_stop(stop) {}

  // 0 <= worker() < the pool's thread count: an index for per-thread state (buffers,
  // decompressors). The calling thread is worker 0.
  std::size_t worker() const { return m_worker; }
  // True once a job failed: no further job starts, and a long job may return early.
  bool stopping() const { return m_stop.load(std::memory_order_relaxed); }

 private:
  std::size_t m_worker;
  const std::atomic<bool>& m_stop;
};

using ParallelJob = std::function<Status(std::size_t index, const JobContext& context)>;

// The number of threads run_parallel uses for `count` jobs and `workers` asked: at least 1, at
// most `count` (0 for no job). Size per-worker state with it.
std::size_t parallel_workers(std::size_t count, std::size_t workers);

// Runs job(i) for every i in [0, count) on parallel_workers(count, workers) threads, the calling
// thread among them, and returns when all have stopped. After the first job that fails no
// further job starts (the ones running finish) and that failure is returned; ok() when every
// job succeeded (count 0 included). When the system gives fewer threads than asked, the ones it
// gives do all the jobs.
Status run_parallel(std::size_t count, std::size_t workers, const ParallelJob& job);

}  // namespace venvfix
