// Compiled with VENVFIX_CRASH_POINTS=1 only in test builds (CMake option VENVFIX_CRASH_POINTS);
// the definition is set on this file alone so that every other object is the same in both.
#include <cstdlib>
#include <memory>

#include "venvfix/txn/step_fs.hpp"

namespace venvfix::txn {

bool crash_points_compiled() {
#ifdef VENVFIX_CRASH_POINTS
  return true;
#else
  return false;
#endif
}

namespace {

#ifdef VENVFIX_CRASH_POINTS
// VENVFIX_CRASH_AT=N (N >= 0), else FaultStepFs::never.
std::size_t crash_at_from_environment() {
  const char* text = std::getenv("VENVFIX_CRASH_AT");
  if (text == nullptr || *text == '\0') return FaultStepFs::never;
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == nullptr || *end != '\0' || value < 0) return FaultStepFs::never;
  return static_cast<std::size_t>(value);
}
#endif

}  // namespace

StepFs& default_step_fs() {
  static RealStepFs real;
#ifdef VENVFIX_CRASH_POINTS
  // Read once per process: the binary under test is started with it set.
  static FaultStepFs crashing(real, crash_at_from_environment(), FaultStepFs::Fault::crash);
  return crashing;
#else
  return real;
#endif
}

}  // namespace venvfix::txn
