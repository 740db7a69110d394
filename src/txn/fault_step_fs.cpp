#include <unistd.h>

#include <algorithm>

#include "venvfix/txn/step_fs.hpp"

namespace venvfix::txn {

std::string_view to_string(StepFs::Op op) {
  switch (op) {
    case StepFs::Op::make_dir:
      return "make_dir";
    case StepFs::Op::set_mode:
      return "set_mode";
    case StepFs::Op::rename:
      return "rename";
    case StepFs::Op::link:
      return "link";
    case StepFs::Op::symlink:
      return "symlink";
    case StepFs::Op::remove:
      return "remove";
    case StepFs::Op::write:
      return "write";
    case StepFs::Op::sync:
      return "sync";
    case StepFs::Op::sync_fs:
      return "sync_fs";
  }
  return "?";
}

FaultStepFs::FaultStepFs(StepFs& real, std::size_t at, Fault fault, int error)
    : m_real(real), m_at(at), m_fault(fault), m_error(error) {}

std::vector<FaultStepFs::Record> FaultStepFs::records() const {
  std::lock_guard guard(m_mutex);
  return m_records;
}

int FaultStepFs::enter(Op op, const std::string& path, const std::string& to) {
  m_count.fetch_add(1);
  {
    std::lock_guard guard(m_mutex);
    m_records.push_back({op, path, to});
  }
  bool eligible = (m_only.empty() || std::find(m_only.begin(), m_only.end(), op) != m_only.end()) &&
                  (m_only_path.empty() || path == m_only_path);
  if (!eligible) return 0;
  std::size_t n = m_eligible.fetch_add(1);
  if (m_at == never || n < m_at) return 0;
  // crash and fail_once: operation `at` only; fail_on: it and every later one.
  if (m_faulted.exchange(true) && m_fault != Fault::fail_on) return 0;
  // A crash: the process ends here, as kill -9 would end it, without unwinding or cleanup.
  if (m_fault == Fault::crash) ::_exit(k_crash_exit_code);
  return m_error;
}

int FaultStepFs::make_dir(int dirfd, const std::string& path, mode_t mode) {
  int error = enter(Op::make_dir, path);
  return error != 0 ? error : m_real.make_dir(dirfd, path, mode);
}

int FaultStepFs::set_mode(int dirfd, const std::string& path, mode_t mode) {
  int error = enter(Op::set_mode, path);
  return error != 0 ? error : m_real.set_mode(dirfd, path, mode);
}

int FaultStepFs::rename(int dirfd, const std::string& from, const std::string& to) {
  int error = enter(Op::rename, from, to);
  return error != 0 ? error : m_real.rename(dirfd, from, to);
}

int FaultStepFs::link(int dirfd, const std::string& from, const std::string& to) {
  int error = enter(Op::link, from, to);
  return error != 0 ? error : m_real.link(dirfd, from, to);
}

int FaultStepFs::symlink(const std::string& target, int dirfd, const std::string& path) {
  int error = enter(Op::symlink, path, target);
  return error != 0 ? error : m_real.symlink(target, dirfd, path);
}

int FaultStepFs::remove(int dirfd, const std::string& path, Remove what) {
  int error = enter(Op::remove, path);
  return error != 0 ? error : m_real.remove(dirfd, path, what);
}

int FaultStepFs::write(int dirfd, const std::string& path, std::string_view data, mode_t mode) {
  int error = enter(Op::write, path);
  return error != 0 ? error : m_real.write(dirfd, path, data, mode);
}

int FaultStepFs::sync(int dirfd, const std::string& path, Sync what) {
  int error = enter(Op::sync, path);
  return error != 0 ? error : m_real.sync(dirfd, path, what);
}

int FaultStepFs::sync_fs(int dirfd) {
  int error = enter(Op::sync_fs, "");
  return error != 0 ? error : m_real.sync_fs(dirfd);
}

}  // namespace venvfix::txn
