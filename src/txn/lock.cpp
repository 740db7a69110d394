#include "venvfix/txn/lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <spdlog/spdlog.h>

#include "venvfix/base/file_lock.hpp"
#include "venvfix/txn/journal.hpp"

namespace venvfix::txn {

namespace {

// The pid the holder wrote, or "" when unreadable (a holder between open and write).
std::string holder_pid(int fd) {
  char buffer[32] = {};
  ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  if (n <= 0) return {};
  std::string text(buffer, static_cast<std::size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string holder_phrase(const std::string& pid) {
  return pid.empty() ? std::string("another venvfix") : fmt::format("venvfix (pid {})", pid);
}

}  // namespace

Result<VenvLock> VenvLock::acquire(const env::Venv& venv, LockWait wait) {
  fs::path dir = venv.state_dir();
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return make_error(ExitCode::error, "cannot create {}: {}", dir.string(), errno_message(errno));
  }
  fs::path path = dir / "lock";
  VENVFIX_TRY_ASSIGN(Fd fd, open_file(path, O_RDWR | O_CREAT, 0644));
  VENVFIX_TRY_ASSIGN(bool taken, try_flock(fd, FlockMode::exclusive, path));
  if (!taken) {
    std::string pid = holder_pid(fd.get());
    if (wait == LockWait::fail) {
      return make_error(ExitCode::locked,
                        "the venv {} is locked by {}; try again when it has finished, or pass "
                        "--wait",
                        venv.root.string(), holder_phrase(pid));
    }
    spdlog::info("waiting for {} to release the venv {}", holder_phrase(pid), venv.root.string());
    VENVFIX_TRY(wait_flock(fd, FlockMode::exclusive, path));
  }
  std::string pid = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd.get(), 0) != 0 ||
      ::pwrite(fd.get(), pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    spdlog::debug("cannot write the holder pid into {}: {}", path.string(), errno_message(errno));
  }
  return VenvLock(std::move(fd), venv.root);
}

Status require_no_unfinished_transaction(const env::Venv& venv) {
  fs::path file = journal_file(venv);
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return ok();
    return make_error(ExitCode::error, "cannot read {}: {}", file.string(), errno_message(errno));
  }
  std::string what = "a transaction";
  if (auto journal = read_journal(venv); journal && journal->has_value()) {
    const Journal& j = **journal;
    what = fmt::format("a transaction ({}, started {} by pid {})", j.reason, j.created, j.pid);
  }
  return make_error(ExitCode::locked,
                    "the venv {} has an unfinished transaction: {} did not finish; run `venvfix "
                    "recover` to bring it back to the state before or finish it",
                    venv.root.string(), what);
}

}  // namespace venvfix::txn
