// Crash injection for the crash-matrix tests. In a build with -DVENVFIX_CRASH_POINTS=ON and
// VENVFIX_CRASH_AT=N in the environment, the process ends with _exit(k_crash_exit_code) right
// after the N-th journaled event of a transaction (0: journal durable, 1..K: step K done,
// K+1: commit marker written). In other builds crash_point() does nothing.
#pragma once

#include <cstddef>

namespace venvfix::txn {

inline constexpr int k_crash_exit_code = 86;

bool crash_points_compiled();
void crash_point(std::size_t event);

}  // namespace venvfix::txn
