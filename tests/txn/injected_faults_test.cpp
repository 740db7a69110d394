// Faults injected through the StepFs seam (step_fs.hpp) at every write of a transaction: EIO,
// ENOSPC, EPERM and EXDEV, once (a transient error) or from then on (a disk that stays full
// or read-only). Each ends with one error that names the failure, and the venv exactly as
// before — or, for a fault after the commit marker, exactly as after once `recover` ran.
// These run everywhere; the same faults on real disks (chattr +i, a full tmpfs) are in
// faults_test.cpp and need root.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "txn/fault_fs_support.hpp"
#include "txn/txn_test_support.hpp"
#include "venvfix/txn/journal.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/recover.hpp"
#include "venvfix/txn/step_fs.hpp"
#include "venvfix/txn/transaction.hpp"

namespace venvfix::txn {
namespace {

using testing::expect_begin_refused;
using testing::expect_execute_fails_then_rolls_back;
using testing::expect_venv_is;
using testing::fingerprint;
using testing::k_site;
using testing::make_small_venv;
using testing::replace_and_remove;
using Fault = FaultStepFs::Fault;

// begin, execute, commit through `disk`; the first error's message ("" when none). An
// uncommitted transaction is rolled back (through `disk` too) when it goes out of scope.
std::string run_through(const env::Venv& venv, const ChangeSet& changes, StepFs& disk) {
  auto lock = VenvLock::acquire(venv, LockWait::fail);
  EXPECT_TRUE(lock);
  auto txn = Transaction::begin(venv, *lock, changes, disk);
  if (!txn) return txn.error().message;
  if (auto executed = txn->execute(); !executed) return executed.error().message;
  if (auto committed = txn->commit(KeepSnapshot::yes); !committed) {
    return committed.error().message;
  }
  return "";
}

// Fresh small venvs on /dev/shm (hundreds of transactions: fsync there is free).
class FreshVenvs : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::memory_temp_dir("venvfix-injected-fault-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
  }
  env::Venv fresh() {
    fs::path dir = m_dir->path() / std::to_string(m_count++);
    fs::create_directories(dir);
    return make_small_venv(dir);
  }
  std::optional<TempDir> m_dir;
  int m_count = 0;
};

class TxnInjectedFaults : public FreshVenvs,
                          public ::testing::WithParamInterface<std::tuple<int, Fault>> {};

TEST_P(TxnInjectedFaults, AtEveryWriteEndsBeforeOrAfterWithOneError) {
  auto [error, fault] = GetParam();
  env::Venv reference = fresh();
  Fingerprint before = fingerprint(reference);
  testing::RecordedRun recorded =
      testing::record_transaction(reference, replace_and_remove(reference));
  Fingerprint after = fingerprint(reference);
  ASSERT_NE(before, after);
  RealStepFs real;
  for (std::size_t n = 0; n < recorded.records.size(); ++n) {
    SCOPED_TRACE(::testing::Message()
                 << "fault at write " << n << " (" << to_string(recorded.records[n].op) << " "
                 << recorded.records[n].path << ")");
    env::Venv venv = fresh();
    FaultStepFs disk(real, n, fault, error);
    std::string message = run_through(venv, replace_and_remove(venv), disk);
    EXPECT_TRUE(disk.faulted());
    EXPECT_NE(message.find(errno_message(error)), std::string::npos) << message;
    EXPECT_NE(message.find(venv.root.string()), std::string::npos) << message;
    // The commit is the marker's rename and its directory's fsync. A fault in that fsync is
    // reported by commit() and the transaction rolled back, marker first; when the disk keeps
    // failing the marker stays, and recover finishes the transaction instead.
    ASSERT_EQ(recorded.records.at(recorded.commit_at + 1).op, StepFs::Op::sync);
    std::size_t marker_synced = recorded.commit_at + 1;
    bool committed = n > marker_synced || (n == marker_synced && fault == Fault::fail_on);
    if (fault == Fault::fail_once && !committed) {
      // A transient fault before the commit: rolled back in process, nothing left to recover.
      EXPECT_TRUE(require_no_unfinished_transaction(venv));
      expect_venv_is(venv, before);
      continue;
    }
    // The roll back (fail_on) or the cleanup after the commit could not finish: the journal
    // says what to do, and `recover` on a healthy disk does it.
    auto lock = VenvLock::acquire(venv, LockWait::fail);
    ASSERT_TRUE(lock);
    auto report = recover(venv, *lock, real);
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_TRUE(require_no_unfinished_transaction(venv));
    const Fingerprint& expected = committed ? after : before;
    expect_venv_is(venv, expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Errors, TxnInjectedFaults,
                         ::testing::Combine(::testing::Values(EIO, ENOSPC, EPERM, EXDEV),
                                            ::testing::Values(Fault::fail_once, Fault::fail_on)),
                         [](const auto& param_info) {
                           int error = std::get<0>(param_info.param);
                           std::string name = error == EIO      ? "EIO"
                                              : error == ENOSPC ? "ENOSPC"
                                              : error == EPERM  ? "EPERM"
                                                                : "EXDEV";
                           return name + (std::get<1>(param_info.param) == Fault::fail_once
                                              ? "Once"
                                              : "FromThenOn");
                         });

// The seam variants of faults_test.cpp's root-only tests: the same assertions, the fault
// injected instead of made with chattr +i or a full tmpfs.
class TxnSeamFaults : public FreshVenvs {};

TEST_F(TxnSeamFaults, FileThatCannotBeMovedRollsBackWithItsName) {
  env::Venv venv = fresh();
  fs::path stuck = venv.root / k_site / "other/mod.py";
  auto before = fingerprint(venv);
  auto lock = VenvLock::acquire(venv, LockWait::fail);
  ASSERT_TRUE(lock);
  RealStepFs real;
  // The immutable file: its rename out of the venv fails with EPERM, whenever it comes.
  FaultStepFs immutable(real, 0, Fault::fail_on, EPERM);
  immutable.only({StepFs::Op::rename}, k_site + "/other/mod.py");
  auto txn = Transaction::begin(venv, *lock, replace_and_remove(venv), immutable);
  ASSERT_TRUE(txn) << txn.error().message;
  ASSERT_NO_FATAL_FAILURE(
      expect_execute_fails_then_rolls_back(*txn, {stuck.string(), errno_message(EPERM)}));
  expect_venv_is(venv, before);
  EXPECT_FALSE(fs::exists(journal_file(venv)));
}

// ENOSPC hits what allocates: directories, files, links; not renames or rmdirs.
const std::vector<StepFs::Op> k_allocating = {StepFs::Op::make_dir, StepFs::Op::write,
                                              StepFs::Op::link, StepFs::Op::symlink};

TEST_F(TxnSeamFaults, FullBeforeTheJournalChangesNothing) {
  env::Venv venv = fresh();
  auto lock = VenvLock::acquire(venv, LockWait::fail);
  ASSERT_TRUE(lock);
  ChangeSet changes = replace_and_remove(venv);
  auto before = fingerprint(venv);
  RealStepFs real;
  FaultStepFs full(real, 0, Fault::fail_on, ENOSPC);
  full.only(k_allocating);
  expect_begin_refused(Transaction::begin(venv, *lock, changes, full), venv, before,
                       "No space left on device");
}

TEST_F(TxnSeamFaults, FullDuringExecuteRollsBack) {
  env::Venv reference = fresh();
  testing::RecordedRun recorded =
      testing::record_transaction(reference, replace_and_remove(reference));
  env::Venv venv = fresh();
  auto lock = VenvLock::acquire(venv, LockWait::fail);
  ASSERT_TRUE(lock);
  auto before = fingerprint(venv);
  RealStepFs real;
  // The disk fills up once the journal is durable: the snapshot directory and the new package
  // directory cannot be created.
  std::size_t allocating_before_execute = 0;  // `at` counts the operations `only` lets fault
  for (std::size_t i = 0; i < recorded.execute_from; ++i) {
    const StepFs::Op op = recorded.records[i].op;
    allocating_before_execute +=
        std::find(k_allocating.begin(), k_allocating.end(), op) != k_allocating.end() ? 1 : 0;
  }
  FaultStepFs full(real, allocating_before_execute, Fault::fail_on, ENOSPC);
  full.only(k_allocating);
  auto txn = Transaction::begin(venv, *lock, replace_and_remove(venv), full);
  ASSERT_TRUE(txn) << txn.error().message;
  ASSERT_NO_FATAL_FAILURE(expect_execute_fails_then_rolls_back(*txn, {"No space left on device"}));
  expect_venv_is(venv, before);
}

}  // namespace
}  // namespace venvfix::txn
