// Compiled with VENVFIX_CRASH_POINTS=1 only in test builds (CMake option VENVFIX_CRASH_POINTS);
// the definition is set on this file alone so that every other object is the same in both.
#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <vector>

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

// VENVFIX_CRASH_OPS: a comma-separated list of operation names; empty: all.
std::vector<StepFs::Op> crash_ops_from_environment() {
  std::vector<StepFs::Op> ops;
  const char* text = std::getenv("VENVFIX_CRASH_OPS");
  std::string_view list = text == nullptr ? "" : text;
  while (!list.empty()) {
    std::string_view name = list.substr(0, list.find(','));
    list.remove_prefix(std::min(list.size(), name.size() + 1));
    for (auto op : {StepFs::Op::make_dir, StepFs::Op::set_mode, StepFs::Op::rename,
                    StepFs::Op::link, StepFs::Op::symlink, StepFs::Op::remove, StepFs::Op::write,
                    StepFs::Op::sync, StepFs::Op::sync_fs}) {
      if (to_string(op) == name) ops.push_back(op);
    }
  }
  return ops;
}
#endif

}  // namespace

StepFs& default_step_fs() {
  static RealStepFs real;
#ifdef VENVFIX_CRASH_POINTS
  // Read once per process: the binary under test is started with it set.
  static const std::size_t k_crash_at = crash_at_from_environment();
  if (k_crash_at == FaultStepFs::never) return real;
  static FaultStepFs crashing(real, k_crash_at, FaultStepFs::Fault::crash);
  static const bool k_configured = [] {
    crashing.only(crash_ops_from_environment());
    return true;
  }();
  (void)k_configured;
  return crashing;
#else
  return real;
#endif
}

}  // namespace venvfix::txn
