#include "threads_refused.hpp"

#include <utility>
#include <variant>

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
  if (m_taken) m_group->return_this_thread();
}

}  // namespace venvfix::testing
