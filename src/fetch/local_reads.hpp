// Reads that need no network (cache hits followed into their streams, file:// URLs), done on
// threads of their own — several at once, as transfers are, and beside the transfers that run
// on the caller's thread — so that a batch lasts about as long as its longest read or transfer,
// not their sum. Each read's outcome is handed back on the caller's thread (take_finished,
// wait_for_some), where it is reported as a transfer's is. Private to src/fetch.
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
  // Must not throw: it runs on a thread of its own.
  using Read = std::function<Status(std::size_t k, const std::stop_token& stop)>;
  struct Finished {
    std::size_t k;
    Status status;
  };

  // Starts `threads` threads (at least one, at most `count`), which do reads 0…count-1, each
  // taking the next one not yet begun, and call `wake` after each (from their own thread: it
  // must be safe to call from any thread, as curl_multi_wakeup is). Where the system refuses
  // threads, fewer run; where it refuses every one, the reads are done on the caller's thread
  // by wait_for_some, one per call, after the transfers.
  LocalReads(std::size_t count, std::size_t threads, Read read, std::function<void()> wake);
  // Asks the reads under way to stop and waits for the threads.
  ~LocalReads();
  LocalReads(const LocalReads&) = delete;
  LocalReads& operator=(const LocalReads&) = delete;

  // The reads finished since the last call, in the order they finished.
  std::vector<Finished> take_finished();
  // The same, waiting until there is one: empty only once every read finished and was taken.
  std::vector<Finished> wait_for_some();

 private:
  void run(const std::stop_token& stop);
  std::vector<Finished> read_here();  // with no thread: the next read, on the caller's thread

  std::size_t m_count;
  Read m_read;
  std::function<void()> m_wake;
  std::mutex m_mutex;
  std::condition_variable m_changed;
  std::size_t m_next = 0;               // the next read to begin
  std::size_t m_threads_ended = 0;      // all ended: every read finished, or none will begin
  std::vector<Finished> m_finished;     // not yet taken
  std::vector<std::jthread> m_threads;  // last: they start once the members they use exist
};

}  // namespace venvfix::fetch::detail
