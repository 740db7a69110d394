// Hashes a file while it is being written, on a thread of its own: the transfer thread only
// says how far the file is written (advance), and this thread reads the new bytes back from
// the page cache (pread) and feeds SHA-256. The curl thread then does what curl itself does
// (receive, write), and hashing runs on another core — that is what keeps a download with
// hashing as fast as curl without it on a machine with a spare core. Where the system refuses
// the thread, finish() reads the whole file back instead.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/base/sha256.hpp"

namespace venvfix::fetch::detail {

class StreamHasher {
 public:
  // `fd` must stay open (and be written only through the owner's calls) for this object's life.
  explicit StreamHasher(int fd);
  ~StreamHasher();
  StreamHasher(const StreamHasher&) = delete;
  StreamHasher& operator=(const StreamHasher&) = delete;

  // The file now holds bytes [0, written). Cheap: wakes the thread only every few hundred KiB.
  void advance(std::uint64_t written);
  // The file was truncated to 0 bytes: forget what was hashed.
  void reset();
  // Waits until bytes [0, written) are hashed and returns their digest (hex); the hasher is
  // then reset. An error when the file could not be read back.
  Result<std::string> finish(std::uint64_t written);

 private:
  void run();
  // Reads bytes [from, from + length) back and hashes them: 0, or the errno of the failed read.
  int hash_back(std::uint64_t from, std::size_t length);
  // finish() without a thread (the system refused one): the bytes not hashed yet, read here.
  Result<std::string> finish_here(std::uint64_t written);

  int m_fd;
  Sha256 m_sha;
  std::mutex m_mutex;
  std::condition_variable m_wake;  // to the thread: more to hash, or stop
  std::condition_variable m_idle;  // from the thread: progress made, or idle
  std::uint64_t m_target = 0;      // hash up to here
  std::uint64_t m_hashed = 0;
  std::uint64_t m_notified = 0;    // m_target at the last wake-up (transfer thread only)
  std::uint64_t m_generation = 0;  // bumped by reset()
  bool m_busy = false;             // the thread is hashing outside the lock
  bool m_stop = false;
  std::optional<std::string> m_error;
  std::vector<char> m_buffer;
  std::thread m_thread;
};

}  // namespace venvfix::fetch::detail
