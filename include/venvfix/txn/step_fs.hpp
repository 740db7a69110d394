// The filesystem as a transaction changes it (ninja's DiskInterface): every write a transaction,
// its roll back and `recover` make goes through a StepFs — the journaled steps (mkdir, rename,
// rmdir), the journal's and commit marker's own writes, the fsyncs and the cleanup. Reads
// (stat, readdir) do not: a fault there changes nothing on disk.
//
// RealStepFs is the default everywhere. FaultStepFs wraps one and, at its N-th operation,
// either fails that operation with a chosen errno or stops the process (_exit) before it:
// the crash matrix and the fault tests (docs/transactions.md, "The filesystem seam").
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"

namespace venvfix::txn {

// The exit code of a process that FaultStepFs stopped.
inline constexpr int k_crash_exit_code = 86;

class StepFs {
 public:
  enum class Op { make_dir, set_mode, rename, link, symlink, remove, write, sync, sync_fs };
  enum class Sync { directory, file_data };  // fsync of a directory, fdatasync of a file

  virtual ~StepFs() = default;
  // Each returns 0 or the errno of the failure. `path` is relative to `dirfd` (an absolute path
  // with AT_FDCWD); they are the *at(2) calls of the same name.
  virtual int make_dir(int dirfd, const std::string& path, mode_t mode) = 0;  // mkdirat
  virtual int set_mode(int dirfd, const std::string& path, mode_t mode) = 0;  // fchmodat
  virtual int rename(int dirfd, const std::string& from, const std::string& to) = 0;
  virtual int link(int dirfd, const std::string& from, const std::string& to) = 0;  // linkat
  virtual int symlink(const std::string& target, int dirfd, const std::string& path) = 0;
  // unlinkat(2); with `tree`, the whole tree (absent: 0) — the cleanup of staging, snapshot
  // and journal directories.
  enum class Remove { file, empty_dir, tree };
  virtual int remove(int dirfd, const std::string& path, Remove what) = 0;
  // Creates or truncates `path` with `mode`, writes `data` and fsyncs it (not atomic:
  // write_atomic below is).
  virtual int write(int dirfd, const std::string& path, std::string_view data, mode_t mode) = 0;
  // Opens `path` ("" is dirfd itself) and fsyncs (directory) or fdatasyncs (file_data) it.
  // ENOENT is returned as such (callers decide); a symlink under file_data gives ELOOP.
  virtual int sync(int dirfd, const std::string& path, Sync what) = 0;
  virtual int sync_fs(int dirfd) = 0;  // syncfs(2)
};

class RealStepFs final : public StepFs {
 public:
  int make_dir(int dirfd, const std::string& path, mode_t mode) override;
  int set_mode(int dirfd, const std::string& path, mode_t mode) override;
  int rename(int dirfd, const std::string& from, const std::string& to) override;
  int link(int dirfd, const std::string& from, const std::string& to) override;
  int symlink(const std::string& target, int dirfd, const std::string& path) override;
  int remove(int dirfd, const std::string& path, Remove what) override;
  int write(int dirfd, const std::string& path, std::string_view data, mode_t mode) override;
  int sync(int dirfd, const std::string& path, Sync what) override;
  int sync_fs(int dirfd) override;
};

// The filesystem transactions use when none is passed: a RealStepFs. In a build with
// -DVENVFIX_CRASH_POINTS=ON and VENVFIX_CRASH_AT=N in the environment, a FaultStepFs that stops
// the process before its N-th operation instead: the crash matrices that run the venvfix
// binary (tests/cli/apply_crash_test.cpp, recover_test.cpp) reach it that way.
// VENVFIX_CRASH_OPS=rename,remove,make_dir (names as to_string(Op)) counts N among those
// kinds only: about one crash point per journaled step, for matrices that run whole commands.
StepFs& default_step_fs();
// Whether this build honours VENVFIX_CRASH_AT.
bool crash_points_compiled();

// Writes `path` atomically through `disk`: base's write_file_atomic with its steps (a temporary
// file beside `path` written and fsync'd, a rename over `path`, an fsync of its directory) as
// operations of `disk`. Errors name `path`.
Status write_atomic(StepFs& disk, const fs::path& path, std::string_view data, mode_t mode = 0644);

// Makes the data of `files` durable through `disk`: base's make_files_durable with its
// fdatasyncs and syncfs as operations of `disk` (absolute paths).
Status make_files_durable(StepFs& disk, const fs::path& dir, const std::vector<fs::path>& files);

// A StepFs that counts the operations it passes to `real` and from operation number `at`
// (0-based) on injects a fault:
//   Fault::crash      _exit(k_crash_exit_code) instead of operation `at`: a process killed
//                     right after operation at-1, with no cleanup (run it in a child);
//   Fault::fail_once  operation `at` returns `error` without happening; later ones happen;
//   Fault::fail_on    it and every later one return `error` (a disk that stays full).
// `at` = never: only counts and records. Thread-safe (commit fsyncs on several threads).
class FaultStepFs final : public StepFs {
 public:
  enum class Fault { crash, fail_once, fail_on };
  static constexpr std::size_t never = static_cast<std::size_t>(-1);
  struct Record {
    Op op;
    std::string path;  // the first path argument (rename: `from`)
    std::string to;    // rename and link: the second
  };

  FaultStepFs(StepFs& real, std::size_t at, Fault fault, int error = 0);
  // Faults only operations of these kinds and, when `path` is not empty, only those whose
  // first path is `path`; `at` then counts these alone (count() and records() still count
  // all). ENOSPC hits what allocates (make_dir, write, symlink, link), not a rename or an
  // rmdir; an immutable file fails only its own rename.
  void only(std::vector<Op> ops, std::string path = "") {
    m_only = std::move(ops);
    m_only_path = std::move(path);
  }

  int make_dir(int dirfd, const std::string& path, mode_t mode) override;
  int set_mode(int dirfd, const std::string& path, mode_t mode) override;
  int rename(int dirfd, const std::string& from, const std::string& to) override;
  int link(int dirfd, const std::string& from, const std::string& to) override;
  int symlink(const std::string& target, int dirfd, const std::string& path) override;
  int remove(int dirfd, const std::string& path, Remove what) override;
  int write(int dirfd, const std::string& path, std::string_view data, mode_t mode) override;
  int sync(int dirfd, const std::string& path, Sync what) override;
  int sync_fs(int dirfd) override;

  // Operations asked for so far (the faulted ones included), and what each was.
  std::size_t count() const { return m_count.load(); }
  std::vector<Record> records() const;
  bool faulted() const { return m_faulted.load(); }

 private:
  // Records the operation; returns 0 to let it happen, else the errno to return.
  int enter(Op op, const std::string& path, const std::string& to = "");

  StepFs& m_real;
  std::size_t m_at;
  Fault m_fault;
  int m_error;
  std::vector<Op> m_only;   // empty: every kind
  std::string m_only_path;  // empty: every path
  std::atomic<std::size_t> m_count{0};
  std::atomic<std::size_t> m_eligible{0};  // operations that `only` lets fault
  std::atomic<bool> m_faulted{false};
  mutable std::mutex m_mutex;
  std::vector<Record> m_records;
};

std::string_view to_string(StepFs::Op op);

}  // namespace venvfix::txn
