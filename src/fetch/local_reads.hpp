// Reads that need no network (cache hits followed into their streams, file:// URLs) done on a
// thread of their own while the transfers run on the caller's thread, so that a batch mixing
// them lasts about as long as the longer of the two, not their sum. Each read's outcome is
// handed back on the caller's thread (take_finished), where it is reported as a transfer's is.
// Private to src/fetch.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include "venvfix/base/result.hpp"

namespace venvfix::fetch::detail {

class LocalReads {
 public:
  // Does read k; returns soon once `stop` is requested (its outcome then no longer matters).
  using Read = std::function<Status(std::size_t k, const std::stop_token& stop)>;
  struct Finished {
    std::size_t k;
    Status status;
  };

  // Starts the thread, which does reads 0…count-1 in order and calls `wake` after each (from
  // that thread: it must be safe to call from any thread, as curl_multi_wakeup is).
  LocalReads(std::size_t count, Read read, std::function<void()> wake);
  // Asks the read under way to stop and waits for the thread.
  ~LocalReads();
  LocalReads(const LocalReads&) = delete;
  LocalReads& operator=(const LocalReads&) = delete;

  // The reads finished since the last call, in order.
  std::vector<Finished> take_finished();
  // Waits until every read finished, then returns those not yet taken.
  std::vector<Finished> wait();

 private:
  void run(const std::stop_token& stop, std::size_t count);

  Read m_read;
  std::function<void()> m_wake;
  std::mutex m_mutex;
  std::condition_variable m_changed;
  std::vector<Finished> m_finished;
  bool m_all_done = false;
  std::jthread m_thread;  // last: it starts once the members it uses exist
};

}  // namespace venvfix::fetch::detail
