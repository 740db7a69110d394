// A thread that the kernel refuses to give new threads or processes, as one at its limit is
// (ulimit -u, a container's pids.max): the calling thread moves into a new cgroup v1 `pids`
// group whose pids.max is 1, itself, so clone() fails with EAGAIN and std::thread's constructor
// throws std::system_error. Root only, and only where the pids controller is mounted; the test
// skips otherwise, saying why. Other threads of the process are not affected.
#pragma once

#include <filesystem>
#include <string>

namespace venvfix::testing {

class ThreadsRefused {
 public:
  ThreadsRefused() = default;
  ~ThreadsRefused();  // the thread goes back to its group, and the new group is removed
  ThreadsRefused(const ThreadsRefused&) = delete;
  ThreadsRefused& operator=(const ThreadsRefused&) = delete;

  // Moves the calling thread (the destructor must run on it too). Returns "" once it cannot
  // start a thread, else why this cannot be made here.
  std::string start();

 private:
  std::filesystem::path m_group;     // the new group, empty until made
  std::filesystem::path m_returned;  // the group this thread came from
};

}  // namespace venvfix::testing
