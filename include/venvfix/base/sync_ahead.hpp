// SyncAhead: fdatasync of files still being written, on a thread of its own, while the writer
// goes on. A disk with a volatile write cache (a virtual disk, most SSDs) empties that cache
// only at the first flush after the writes, and a flush after a gigabyte written takes as long
// as writing it out: paid at the end, it is a stretch where no CPU works (docs/apply.md,
// "Durability while downloading"). Synced while the download goes on, each flush carries only
// what was written since the last one, and the transaction's own fdatasyncs find little left.
//
// A background fdatasync that fails may be the only one the kernel reports that error to (an
// error is reported once to each open file, and a file opened afterwards is not told): so the
// writer must drain() and treat a failure as its own before it relies on the files (seen on a
// disk that really refuses writes: tests/base/disk_write_error_test.cpp).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"

namespace venvfix {

class SyncAhead {
 public:
  // `sync`: what makes one file's data durable (fdatasync; a test records the calls instead);
  // returns 0 or an errno.
  using SyncFunction = std::function<int(int fd)>;

  // Throws std::system_error when no thread can be started (std::thread's only report).
  explicit SyncAhead(SyncFunction sync = default_sync());
  ~SyncAhead();  // the files not yet synced are left to the writer's own durability
  SyncAhead(const SyncAhead&) = delete;
  SyncAhead& operator=(const SyncAhead&) = delete;

  // The data written to `fd` so far is to be synced (`path` names it in an error). A sync of the
  // same file still waiting covers these bytes too: nothing more is queued then.
  void add(int fd, const std::string& path);

  // Waits until everything added has been synced; the first failure, naming the file.
  Status drain();

  static SyncFunction default_sync();

 private:
  struct Pending {
    Fd fd;  // a duplicate: the writer may close its own
    dev_t device = 0;
    ino_t inode = 0;
    std::string path;
  };
  void run();

  SyncFunction m_sync;
  std::mutex m_mutex;
  std::condition_variable m_changed;  // work added, work done, or stop
  std::vector<Pending> m_queue;
  bool m_busy = false;               // the thread is syncing a batch taken from the queue
  std::atomic<bool> m_stop = false;  // read between one file's sync and the next
  std::optional<Error> m_failure;
  std::thread m_thread;
};

}  // namespace venvfix
