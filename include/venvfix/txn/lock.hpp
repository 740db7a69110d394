// The venv's lock: only one venvfix changes a venv at a time.
//
// The lock is flock(2) on <venv>/.venvfix/lock. The kernel drops it when the holder exits,
// however it exits (kill -9 included), so a stale lock never needs cleaning up; the holder's
// pid is written into the file only so that a second venvfix can name it.
#pragma once

#include <string>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::txn {

enum class LockWait { fail, wait };

class VenvLock {
 public:
  // Takes the lock, creating <venv>/.venvfix/ as needed. Busy with LockWait::fail: an Error
  // with ExitCode::locked naming the venv and the holder's pid; with LockWait::wait it blocks
  // (logging once whom it waits for).
  static Result<VenvLock> acquire(const env::Venv& venv, LockWait wait);

  VenvLock(VenvLock&&) noexcept = default;
  VenvLock& operator=(VenvLock&&) noexcept = default;
  VenvLock(const VenvLock&) = delete;
  VenvLock& operator=(const VenvLock&) = delete;
  ~VenvLock() = default;  // closing the descriptor releases the lock

  const fs::path& venv_root() const { return m_root; }

 private:
  VenvLock(Fd fd, fs::path root) : m_fd(std::move(fd)), m_root(std::move(root)) {}
  Fd m_fd;
  fs::path m_root;
};

// Ok when no journal exists under <venv>/.venvfix/journal/. Otherwise an Error with
// ExitCode::locked: "<venv> has an unfinished transaction (…); run `venvfix recover`".
// Every command calls it before reading or changing the venv (cli/session.cpp).
Status require_no_unfinished_transaction(const env::Venv& venv);

}  // namespace venvfix::txn
