// Who may use the download cache while `venvfix cache prune` removes from it. Every process that
// reads or writes the cache's parts (a fetch::Downloader: plan, apply, fetch, uninstall --repair)
// holds a shared flock(2) on <cache>/lock for as long as it lives, and prune holds it exclusively:
// a prune never removes a wheel or an unpacked wheel that a running apply is about to install
// from, and an apply never finds half of a removed entry. uv locks its cache the same way. The
// kernel drops a lock when its holder exits, killed or not, so no lock outlives a process.
#pragma once

#include <filesystem>
#include <functional>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"

namespace venvfix::fetch {

class CacheLock {
 public:
  enum class Mode { shared, exclusive };
  enum class Wait { fail, wait };

  // The lock on `cache_dir`'s lock file (the file is created when missing, the directory is
  // not). When it is held the other way: Wait::fail is ExitCode::locked naming the cache,
  // Wait::wait calls `on_wait` once, then waits for it.
  static Result<CacheLock> acquire(const std::filesystem::path& cache_dir, Mode mode, Wait wait,
                                   const std::function<void()>& on_wait = {});

  // Releases the lock (as the destructor does).
  void release() { m_fd = Fd(); }

 private:
  explicit CacheLock(Fd fd) : m_fd(std::move(fd)) {}
  Fd m_fd;
};

}  // namespace venvfix::fetch
