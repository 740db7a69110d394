// Helpers for the tests that drive a transaction through a FaultStepFs (step_fs.hpp): one
// recorded run tells how many writes a transaction makes, which one is the commit point and
// which one performs each journaled step.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "venvfix/txn/journal.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/step_fs.hpp"
#include "venvfix/txn/transaction.hpp"

namespace venvfix::txn::testing {

struct RecordedRun {
  std::vector<FaultStepFs::Record> records;  // every write, in order
  std::vector<Step> steps;                   // the journal's steps
  std::size_t execute_from = 0;              // the first write of execute()
  std::size_t commit_at = 0;                 // the rename that makes the commit marker exist
};

// The index of the rename that creates the commit marker (the moment a transaction becomes
// "after"), or records.size() when there is none.
inline std::size_t commit_point(const std::vector<FaultStepFs::Record>& records) {
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    if (r.op == StepFs::Op::rename && r.to.ends_with("/.venvfix/journal/committed")) return i;
  }
  return records.size();
}

// Whether the write that performs `step` is among `records`.
inline bool performed(const std::vector<FaultStepFs::Record>& records, const Journal& journal,
                      const Step& step) {
  for (const auto& r : records) {
    switch (step.op) {
      case StepOp::make_dir:
        if (r.op == StepFs::Op::make_dir && r.path == step.path) return true;
        break;
      case StepOp::move_out:
        if (r.op == StepFs::Op::rename && r.path == step.path &&
            r.to == journal.snapshot_files() + "/" + step.path) {
          return true;
        }
        break;
      case StepOp::move_in:
        if (r.op == StepFs::Op::rename && r.path == journal.staging + "/" + step.path &&
            r.to == step.path) {
          return true;
        }
        break;
      case StepOp::prune_dir:
        if (r.op == StepFs::Op::remove && r.path == step.path) return true;
        break;
    }
  }
  return false;
}

// Runs begin, execute, commit(keep) in this process through a recording FaultStepFs and checks
// that every journaled step was one of its writes.
inline RecordedRun record_transaction(const env::Venv& venv, const ChangeSet& changes,
                                      KeepSnapshot keep = KeepSnapshot::yes) {
  RealStepFs real;
  FaultStepFs recorder(real, FaultStepFs::never, FaultStepFs::Fault::crash);
  RecordedRun run;
  auto lock = VenvLock::acquire(venv, LockWait::fail);
  EXPECT_TRUE(lock);
  auto txn = Transaction::begin(venv, *lock, changes, recorder);
  EXPECT_TRUE(txn) << txn.error().message;
  if (!txn) return run;
  auto journal = read_journal(venv);
  EXPECT_TRUE(journal && *journal);
  run.execute_from = recorder.count();
  EXPECT_TRUE(txn->execute());
  EXPECT_TRUE(txn->commit(keep));
  run.records = recorder.records();
  run.steps = (*journal)->steps;
  run.commit_at = commit_point(run.records);
  EXPECT_LT(run.commit_at, run.records.size()) << "no commit marker was written";
  for (const Step& step : run.steps) {
    EXPECT_TRUE(performed(run.records, **journal, step))
        << to_string(step.op) << " " << step.path << " did not go through the StepFs";
  }
  return run;
}

}  // namespace venvfix::txn::testing
