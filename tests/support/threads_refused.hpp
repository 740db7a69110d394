// A thread that the kernel refuses to give new threads or processes, as one at its limit is
// (ulimit -u, a container's pids.max): the calling thread moves into a new cgroup v1 `pids`
// group (support/pids_group.hpp) whose pids.max is 1, itself, so clone() fails with EAGAIN and
// std::thread's constructor throws std::system_error. Root only, and only where the pids
// controller is mounted; the test skips otherwise, saying why. Other threads of the process are
// not affected.
#pragma once

#include <optional>
#include <string>

#include "support/pids_group.hpp"

namespace venvfix::testing {

class ThreadsRefused {
 public:
  ThreadsRefused() = default;
  ~ThreadsRefused();  // the thread goes back to its group, and the new group is removed
  ThreadsRefused(const ThreadsRefused&) = delete;
  ThreadsRefused& operator=(const ThreadsRefused&) = delete;

  // Moves the calling thread (the destructor must run on it too). Returns "" once it cannot
  // start a thread, else why this cannot be made here. With `max` above 1 the group takes that
  // many tasks in all: the thread and `max` - 1 threads or processes it starts.
  std::string start(unsigned max = 1);
  // The group, once start() made it: a test raises its pids.max to let a thread or process in.
  const PidsGroup& group() const { return *m_group; }

 private:
  std::optional<PidsGroup> m_group;  // destroyed after the thread has left it
  bool m_taken = false;              // the calling thread is in the group
};

}  // namespace venvfix::testing
