#include "threads_refused.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>

namespace venvfix::testing {

std::string ThreadsRefused::start(unsigned max) {
  auto made = PidsGroup::create(max);
  if (auto* reason = std::get_if<std::string>(&made)) return *reason;
  m_group.emplace(std::move(std::get<PidsGroup>(made)));
  if (!m_group->take_this_thread()) return "cannot limit this thread in " + m_group->dir().string();
  m_taken = true;
  return "";
}

ThreadsRefused::~ThreadsRefused() {
  if (m_taken) {
    std::ofstream(m_group->parent() / "tasks")
        << std::to_string(static_cast<long>(::syscall(SYS_gettid)));
  }
}

}  // namespace venvfix::testing
