// Work started beside the calling thread, which still gets done where the system refuses a thread.
//
// std::async(std::launch::async, …) throws std::system_error when no thread can start (a
// container at its pids.max, `ulimit -u`). Threads are a speed-up in venvfix, never a
// requirement, so every std::async goes through run_beside, which then runs the work on the
// calling thread: at once, or when its result is first asked for, as the caller says.
#pragma once

#include <future>
#include <system_error>
#include <type_traits>
#include <utility>

namespace venvfix {

// Where run_beside's work runs when no thread can start for it.
enum class WhenRefused {
  // At once, before run_beside returns. For work that others wait on (a promise it keeps), or
  // that must run even if its future is never asked (a std::async future's destructor waits
  // for its thread; a deferred one is dropped unrun).
  now,
  // At the future's first get() or wait(), and not at all if it is never asked. For work that
  // waits for something the caller does first (a byte it sends, a process it starts) or whose
  // result may go unused.
  at_first_get,
};

// std::async(std::launch::async, work), or, where the system refuses the thread, the same work
// on the calling thread as `when` says. Exceptions other than the refusal go as std::async's do.
template <typename Work>
std::future<std::invoke_result_t<std::decay_t<Work>>> run_beside(WhenRefused when, Work&& work) {
  try {
    return std::async(std::launch::async, work);
  } catch (const std::system_error&) {
    // std::async leaves `work` unconsumed (it was copied, not moved), so it can still run here.
    auto deferred = std::async(std::launch::deferred, std::forward<Work>(work));
    if (when == WhenRefused::now) deferred.wait();
    return deferred;
  }
}

}  // namespace venvfix
