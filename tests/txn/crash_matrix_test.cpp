// Crash matrix: a transaction stopped (_exit, by a FaultStepFs) before each of its writes N,
// and killed with SIGKILL at random moments; after `recover` the venv must be exactly the
// state before or the state after, never a mix. The transaction runs in a forked child of the
// test process.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "txn/fault_fs_support.hpp"
#include "txn/txn_test_support.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/recover.hpp"
#include "venvfix/txn/snapshot.hpp"
#include "venvfix/txn/step_fs.hpp"
#include "venvfix/txn/transaction.hpp"

namespace venvfix::txn {
namespace {

using testing::fingerprint;
using testing::k_site;
using testing::make_small_venv;
using testing::write_text;

// A venv with `extra` more files in many directories, and a change set that replaces some,
// removes some (pruning directories) and adds some in new directories.
struct Case {
  env::Venv venv;
  ChangeSet changes;
};

void add_bulk(const env::Venv& venv, int extra) {
  for (int i = 0; i < extra; ++i) {
    write_text(venv.root / k_site / fmt::format("bulk{}/m{}.py", i % 17, i), std::to_string(i));
  }
}

ChangeSet bulk_changes(const env::Venv& venv, int extra) {
  auto staging = make_staging_dir(venv);
  ChangeSet changes;
  changes.reason = "crash matrix";
  changes.staging = *staging;
  write_text(*staging / k_site / "pkg/__init__.py", "x = 2\n");
  write_text(*staging / k_site / "newpkg/a/b.py", "new\n", 0600);
  fs::create_symlink("a/b.py", *staging / k_site / "newpkg/link.py");
  changes.add = {k_site + "/pkg/__init__.py", k_site + "/newpkg/a/b.py",
                 k_site + "/newpkg/link.py"};
  changes.remove = {k_site + "/pkg/__init__.py", k_site + "/pkg/sub/deep/data.txt"};
  for (int i = 0; i < extra; ++i) {
    std::string rel = k_site + fmt::format("/bulk{}/m{}.py", i % 17, i);
    if (i % 3 == 0) changes.remove.push_back(rel);  // bulk dirs stay non-empty
    if (i % 3 == 1) {
      write_text(*staging / rel, "replaced");
      changes.add.push_back(rel);
    }
    if (i % 5 == 0) {
      std::string fresh = k_site + fmt::format("/fresh{}/n{}.py", i % 7, i);
      write_text(*staging / fresh, "fresh");
      changes.add.push_back(fresh);
    }
  }
  return changes;
}

// Runs the transaction in a child that stops before its write number `crash_at`
// (FaultStepFs::never: runs to the end); returns its exit status (or 128+signal).
int transaction_in_child(const env::Venv& venv, const ChangeSet& changes, std::size_t crash_at,
                         pid_t* child_pid = nullptr, bool wait_for_child = true) {
  pid_t pid = ::fork();
  if (pid == 0) {
    RealStepFs real;
    FaultStepFs disk(real, crash_at, FaultStepFs::Fault::crash);
    auto lock = VenvLock::acquire(venv, LockWait::wait);
    if (!lock) ::_exit(2);
    auto txn = Transaction::begin(venv, *lock, changes, disk);
    if (!txn) ::_exit(3);
    if (!txn->execute()) ::_exit(4);
    if (!txn->commit(KeepSnapshot::yes)) ::_exit(5);
    ::_exit(0);
  }
  if (child_pid != nullptr) *child_pid = pid;
  if (!wait_for_child) return -1;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

enum class Outcome { before, after, mix };

Outcome recover_and_classify(const env::Venv& venv, const Fingerprint& before,
                             const Fingerprint& after) {
  auto lock = VenvLock::acquire(venv, LockWait::fail);
  EXPECT_TRUE(lock);
  auto report = recover(venv, *lock);
  EXPECT_TRUE(report) << report.error().message;
  EXPECT_TRUE(require_no_unfinished_transaction(venv));
  auto now = fingerprint(venv);
  if (now == before) return Outcome::before;
  if (now == after) return Outcome::after;
  ADD_FAILURE() << "a mix of before and after:\n"
                << describe_difference(before, now) << "against after:\n"
                << describe_difference(after, now);
  return Outcome::mix;
}

class TxnCrashMatrix : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::memory_temp_dir("venvfix-crash-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
  }
  // A fresh venv in its own directory, with the fingerprints before and after the change.
  env::Venv fresh(int extra, Fingerprint* before) {
    fs::path dir = m_dir->path() / std::to_string(m_count++);
    fs::create_directories(dir);
    env::Venv venv = make_small_venv(dir);
    add_bulk(venv, extra);
    if (before != nullptr) *before = fingerprint(venv);
    return venv;
  }
  Fingerprint after_print(int extra) {
    env::Venv venv = fresh(extra, nullptr);
    EXPECT_EQ(transaction_in_child(venv, bulk_changes(venv, extra), FaultStepFs::never), 0);
    return fingerprint(venv);
  }
  std::optional<TempDir> m_dir;
  int m_count = 0;
};

// Every write of the transaction (journal, each step, fsyncs, commit marker, cleanup) is a
// crash point: a crash before the commit marker's rename recovers to before, one after it to
// after.
TEST_F(TxnCrashMatrix, EveryJournaledEvent) {
  constexpr int k_extra = 12;
  Fingerprint after = after_print(k_extra);
  testing::RecordedRun recorded;
  {
    env::Venv venv = fresh(k_extra, nullptr);
    recorded = testing::record_transaction(venv, bulk_changes(venv, k_extra));
    ASSERT_EQ(fingerprint(venv), after);
  }
  const std::size_t writes = recorded.records.size();
  ASSERT_GT(recorded.steps.size(), 20u);
  int befores = 0;
  int afters = 0;
  for (std::size_t n = 0; n <= writes; ++n) {
    Fingerprint before;
    env::Venv venv = fresh(k_extra, &before);
    int status = transaction_in_child(venv, bulk_changes(venv, k_extra), n);
    if (n == writes) {
      EXPECT_EQ(status, 0) << "the transaction made more writes than the recorded run";
      break;
    }
    ASSERT_EQ(status, k_crash_exit_code) << "crash before write " << n;
    Outcome outcome = recover_and_classify(venv, before, after);
    Outcome expected = n <= recorded.commit_at ? Outcome::before : Outcome::after;
    EXPECT_EQ(outcome, expected) << "crash before write " << n << " ("
                                 << to_string(recorded.records[n].op) << " "
                                 << recorded.records[n].path << ")";
    (outcome == Outcome::before ? befores : afters) += outcome == Outcome::mix ? 0 : 1;
  }
  std::printf(
      "crash matrix: %zu steps, %zu writes (commit marker at %zu): %d recovered to before, %d to "
      "after\n",
      recorded.steps.size(), writes, recorded.commit_at, befores, afters);
  EXPECT_EQ(static_cast<std::size_t>(befores + afters), writes);
}

// A restore of a whole-venv snapshot (kept, so relinked after its commit) stopped before each
// of its writes: the same rule through restore_snapshot, in every build (the `venvfix rollback`
// matrix in tests/cli/recover_test.cpp needs a crash-point build).
TEST_F(TxnCrashMatrix, TreeSnapshotRestoreAtEveryWrite) {
  // A venv with a tree snapshot ("target"), then changed as pip would change it ("current").
  auto setup = [&](std::string* id, Fingerprint* target) {
    env::Venv venv = fresh(6, target);
    auto lock = VenvLock::acquire(venv, LockWait::fail);
    EXPECT_TRUE(lock);
    auto info = create_snapshot(venv, *lock, "crash matrix");
    EXPECT_TRUE(info) << info.error().message;
    *id = info->id;
    fs::path site = venv.root / k_site;
    fs::remove_all(site / "bulk1");
    fs::remove(site / "pkg/__init__.py");
    write_text(site / "pkg/__init__.py", "other\n");
    write_text(site / "added/x.py", "x");
    return venv;
  };
  auto restore = [](const env::Venv& venv, const std::string& id, StepFs& disk) {
    auto lock = VenvLock::acquire(venv, LockWait::wait);
    return lock && restore_snapshot(venv, *lock, id, KeepSnapshot::no, disk);
  };
  std::string id;
  Fingerprint target;
  std::vector<FaultStepFs::Record> records;
  {
    env::Venv venv = setup(&id, &target);
    RealStepFs real;
    FaultStepFs recorder(real, FaultStepFs::never, FaultStepFs::Fault::crash);
    ASSERT_TRUE(restore(venv, id, recorder));
    ASSERT_EQ(fingerprint(venv), target);
    records = recorder.records();
  }
  std::size_t commit_at = testing::commit_point(records);
  ASSERT_LT(commit_at, records.size());
  int befores = 0;
  int afters = 0;
  for (std::size_t n = 0; n < records.size(); ++n) {
    env::Venv venv = setup(&id, &target);
    Fingerprint current = fingerprint(venv);
    pid_t pid = ::fork();
    if (pid == 0) {
      RealStepFs real;
      FaultStepFs disk(real, n, FaultStepFs::Fault::crash);
      ::_exit(restore(venv, id, disk) ? 0 : 3);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == k_crash_exit_code) << "write " << n;
    Outcome outcome = recover_and_classify(venv, current, target);
    EXPECT_EQ(outcome, n <= commit_at ? Outcome::before : Outcome::after)
        << "crash before write " << n << " (" << to_string(records[n].op) << " " << records[n].path
        << ")";
    if (outcome == Outcome::before) ++befores;
    if (outcome == Outcome::after) ++afters;
  }
  std::printf("tree snapshot restore crash matrix: %zu writes, %d before, %d after\n",
              records.size(), befores, afters);
  EXPECT_EQ(static_cast<std::size_t>(befores + afters), records.size());
}

// `recover` is idempotent: a recover stopped before each of its own writes, then a second
// recover, still ends exactly before (a transaction crashed mid-execute) or exactly after (one
// crashed in its cleanup).
TEST_F(TxnCrashMatrix, RecoverItselfStoppedAtEveryWrite) {
  constexpr int k_extra = 6;
  Fingerprint after = after_print(k_extra);
  testing::RecordedRun recorded;
  {
    env::Venv venv = fresh(k_extra, nullptr);
    recorded = testing::record_transaction(venv, bulk_changes(venv, k_extra));
  }
  const std::size_t mid_execute =
      recorded.execute_from + (recorded.commit_at - recorded.execute_from) / 2;
  for (std::size_t crash_at : {mid_execute, recorded.commit_at + 2}) {
    bool committed = crash_at > recorded.commit_at;
    int recovers = 0;
    for (std::size_t n = 0;; ++n) {
      Fingerprint before;
      env::Venv venv = fresh(k_extra, &before);
      ASSERT_EQ(transaction_in_child(venv, bulk_changes(venv, k_extra), crash_at),
                k_crash_exit_code);
      pid_t pid = ::fork();
      if (pid == 0) {
        RealStepFs real;
        FaultStepFs disk(real, n, FaultStepFs::Fault::crash);
        auto lock = VenvLock::acquire(venv, LockWait::wait);
        ::_exit(lock && recover(venv, *lock, disk) ? 0 : 3);
      }
      int status = 0;
      ::waitpid(pid, &status, 0);
      ASSERT_TRUE(WIFEXITED(status));
      Outcome outcome = recover_and_classify(venv, before, after);
      EXPECT_EQ(outcome, committed ? Outcome::after : Outcome::before)
          << "recover stopped before its write " << n;
      if (WEXITSTATUS(status) == 0) break;  // past its last write
      ASSERT_EQ(WEXITSTATUS(status), k_crash_exit_code);
      ++recovers;
    }
    std::printf("recover of a transaction stopped before write %zu (%s): %d crash points\n",
                crash_at, committed ? "after the commit" : "mid-execute", recovers);
    EXPECT_GT(recovers, committed ? 1 : 5);
  }
}

TEST_F(TxnCrashMatrix, KillAtRandomMoments) {
  constexpr int k_extra = 300;
  constexpr int k_kills = 30;
  Fingerprint after = after_print(k_extra);
  // How long a whole transaction takes here, to spread the kills over it.
  auto start = std::chrono::steady_clock::now();
  {
    env::Venv venv = fresh(k_extra, nullptr);
    ChangeSet changes = bulk_changes(venv, k_extra);
    start = std::chrono::steady_clock::now();
    ASSERT_EQ(transaction_in_child(venv, changes, FaultStepFs::never), 0);
  }
  auto span = std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  std::mt19937 random(12345);
  std::uniform_int_distribution<long> delay(0, span);
  int killed = 0, finished = 0, befores = 0, afters = 0;
  for (int i = 0; i < k_kills; ++i) {
    Fingerprint before;
    env::Venv venv = fresh(k_extra, &before);
    ChangeSet changes = bulk_changes(venv, k_extra);
    pid_t pid = -1;
    transaction_in_child(venv, changes, FaultStepFs::never, &pid, false);
    std::this_thread::sleep_for(std::chrono::microseconds(delay(random)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
      ++killed;
    else
      ++finished;
    Outcome outcome = recover_and_classify(venv, before, after);
    if (outcome == Outcome::before) ++befores;
    if (outcome == Outcome::after) ++afters;
  }
  std::printf(
      "kill -9: %d runs (transaction of %ld us), %d killed, %d finished first; %d recovered to "
      "before, %d to after\n",
      k_kills, static_cast<long>(span), killed, finished, befores, afters);
  EXPECT_EQ(befores + afters, k_kills);
}

}  // namespace
}  // namespace venvfix::txn
