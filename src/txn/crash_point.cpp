// Compiled with VENVFIX_CRASH_POINTS=1 only in test builds (CMake option VENVFIX_CRASH_POINTS);
// the definition is set on this file alone so that every other object is the same in both.
#include "venvfix/txn/crash_point.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace venvfix::txn {

bool crash_points_compiled() {
#ifdef VENVFIX_CRASH_POINTS
  return true;
#else
  return false;
#endif
}

void crash_point([[maybe_unused]] std::size_t event) {
#ifdef VENVFIX_CRASH_POINTS
  // Read at every call (a handful per transaction) so a forked test child can set it.
  const long k_crash_at = [] {
    const char* text = std::getenv("VENVFIX_CRASH_AT");
    if (text == nullptr || *text == '\0') return -1L;
    char* end = nullptr;
    long value = std::strtol(text, &end, 10);
    return (end != nullptr && *end == '\0' && value >= 0) ? value : -1L;
  }();
  if (k_crash_at >= 0 && static_cast<std::size_t>(k_crash_at) == event) ::_exit(k_crash_exit_code);
#endif
}

}  // namespace venvfix::txn
