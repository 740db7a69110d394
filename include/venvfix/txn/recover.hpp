// `venvfix recover`: finishes what a crashed (or killed) transaction left.
#pragma once

#include <string>

#include "venvfix/base/result.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/step_fs.hpp"

namespace venvfix::txn {

enum class RecoverOutcome {
  nothing,      // no unfinished transaction (stale staging directories were removed)
  rolled_back,  // no commit marker: the venv is back to exactly the state before
  completed     // commit marker: the venv is in exactly the state after; cleanup done
};

struct RecoverReport {
  RecoverOutcome outcome = RecoverOutcome::nothing;
  std::string id;      // the transaction's id
  std::string reason;  // what it was ("apply plan.json")
};

// Without a commit marker: undoes every step that ran (each decided from the filesystem),
// removes staging and the transaction's snapshot. With one: removes what commit() would have.
// Idempotent: a crash during recover is recovered by running it again. Writes go through
// `disk`.
Result<RecoverReport> recover(const env::Venv& venv, const VenvLock& lock,
                              StepFs& disk = default_step_fs());

}  // namespace venvfix::txn
