// Transaction: begin/execute/commit/roll_back on a small venv, checked with fingerprints.
#include "venvfix/txn/transaction.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "txn/txn_test_support.hpp"
#include "venvfix/txn/journal.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/recover.hpp"

namespace venvfix::txn {
namespace {

using testing::fingerprint;
using testing::k_site;
using testing::make_small_venv;
using testing::read_text;
using testing::write_text;

class TxnTransaction : public testing::LockedVenvTest {
 protected:
  TxnTransaction() : LockedVenvTest("venvfix-txn-test-") {}

  // A change set: replaces pkg/__init__.py, removes pkg/sub/deep/data.txt (pruning sub/ and
  // sub/deep/), adds newpkg/a/b.py (creating newpkg/ and newpkg/a/) and a symlink.
  ChangeSet typical_changes() {
    auto staging = make_staging_dir(m_venv);
    EXPECT_TRUE(staging);
    fs::path stage = *staging;
    write_text(stage / k_site / "pkg/__init__.py", "x = 2\n");
    write_text(stage / k_site / "newpkg/a/b.py", "new\n", 0600);
    ::chmod((stage / k_site / "newpkg").c_str(), 0750);
    fs::create_symlink("a/b.py", stage / k_site / "newpkg/link.py");
    ChangeSet changes;
    changes.reason = "test change";
    changes.staging = stage;
    changes.add = {k_site + "/pkg/__init__.py", k_site + "/newpkg/a/b.py",
                   k_site + "/newpkg/link.py"};
    changes.remove = {k_site + "/pkg/__init__.py", k_site + "/pkg/sub/deep/data.txt",
                      k_site + "/not/there.py"};
    return changes;
  }
};

TEST_F(TxnTransaction, CommitMovesFilesAndPrunesEmptyDirectories) {
  auto txn = Transaction::begin(m_venv, *m_lock, typical_changes());
  ASSERT_TRUE(txn) << txn.error().message;
  EXPECT_TRUE(fs::exists(journal_file(m_venv)));
  ASSERT_TRUE(txn->execute());
  auto id = txn->commit(KeepSnapshot::no);
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_FALSE(id->has_value());
  EXPECT_EQ(read_text(site() / "pkg/__init__.py"), "x = 2\n");
  EXPECT_EQ(read_text(site() / "newpkg/a/b.py"), "new\n");
  EXPECT_EQ(fs::status(site() / "newpkg").permissions(), fs::perms(0750));
  EXPECT_EQ(fs::read_symlink(site() / "newpkg/link.py"), "a/b.py");
  EXPECT_FALSE(fs::exists(site() / "pkg/sub"));
  EXPECT_TRUE(fs::exists(site() / "pkg/lib/libpkg.so.1"));
  EXPECT_FALSE(fs::exists(journal_dir(m_venv)));
  EXPECT_TRUE(fs::is_empty(m_venv.state_dir() / "staging"));
  EXPECT_FALSE(fs::exists(m_venv.state_dir() / "snapshots" / txn->id()));
}

TEST_F(TxnTransaction, StagedFilesReachTheDiskBeforeTheJournalIsWritten) {
  ChangeSet changes = typical_changes();
  RealStepFs real;
  FaultStepFs recorder(real, FaultStepFs::never, FaultStepFs::Fault::crash);
  auto txn = Transaction::begin(m_venv, *m_lock, changes, recorder);
  ASSERT_TRUE(txn) << txn.error().message;
  std::vector<FaultStepFs::Record> records = recorder.records();
  auto journal_write = std::find_if(records.begin(), records.end(), [](const auto& record) {
    return record.op == StepFs::Op::write && record.path.find("journal") != std::string::npos;
  });
  ASSERT_NE(journal_write, records.end());
  // A sync was asked for every staged file before the journal that refers to it was written. For
  // the symlink it fails with ELOOP and make_files_durable skips it: a link has no data of its own.
  std::set<std::string> synced;
  for (auto record = records.begin(); record != journal_write; ++record) {
    if (record->op == StepFs::Op::sync) synced.insert(record->path);
  }
  for (const std::string& added : changes.add) {
    EXPECT_TRUE(synced.contains((changes.staging / added).string())) << added;
  }
  ASSERT_TRUE(txn->execute());
  ASSERT_TRUE(txn->commit(KeepSnapshot::no));
}

TEST_F(TxnTransaction, RollBackAfterExecuteRestoresExactly) {
  auto before = fingerprint(m_venv);
  auto txn = Transaction::begin(m_venv, *m_lock, typical_changes());
  ASSERT_TRUE(txn) << txn.error().message;
  ASSERT_TRUE(txn->execute());
  EXPECT_NE(fingerprint(m_venv), before);
  ASSERT_TRUE(txn->roll_back());
  auto after = fingerprint(m_venv);
  EXPECT_EQ(after, before) << describe_difference(before, after);
  EXPECT_FALSE(fs::exists(journal_dir(m_venv)));
  EXPECT_TRUE(fs::is_empty(m_venv.state_dir() / "staging"));
}

TEST_F(TxnTransaction, DestructorRollsBackAnUncommittedTransaction) {
  auto before = fingerprint(m_venv);
  {
    auto txn = Transaction::begin(m_venv, *m_lock, typical_changes());
    ASSERT_TRUE(txn) << txn.error().message;
    ASSERT_TRUE(txn->execute());
  }
  EXPECT_EQ(fingerprint(m_venv), before);
}

TEST_F(TxnTransaction, KeptSnapshotHoldsReplacedFilesAndAddedList) {
  auto txn = Transaction::begin(m_venv, *m_lock, typical_changes());
  ASSERT_TRUE(txn) << txn.error().message;
  ASSERT_TRUE(txn->execute());
  auto id = txn->commit(KeepSnapshot::yes);
  ASSERT_TRUE(id) << id.error().message;
  ASSERT_TRUE(id->has_value());
  fs::path snap = m_venv.state_dir() / "snapshots" / **id;
  EXPECT_EQ(read_text(snap / "files" / k_site / "pkg/__init__.py"), "x = 1\n");
  EXPECT_EQ(read_text(snap / "files" / k_site / "pkg/sub/deep/data.txt"), "deep\n");
  std::string manifest = read_text(snap / "manifest");
  EXPECT_NE(manifest.find("kind transaction"), std::string::npos);
  EXPECT_NE(manifest.find("A 0 0 0 0 0 0 0 " + k_site + "/newpkg/a/b.py"), std::string::npos);
}

TEST_F(TxnTransaction, UnfinishedJournalBlocksAndRecoverRollsBack) {
  auto before = fingerprint(m_venv);
  auto txn = Transaction::begin(m_venv, *m_lock, typical_changes());
  ASSERT_TRUE(txn) << txn.error().message;
  ASSERT_TRUE(txn->execute());
  // The journal of an executed, uncommitted transaction is what a crash leaves.
  auto refused = require_no_unfinished_transaction(m_venv);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::locked);
  EXPECT_NE(refused.error().message.find("venvfix recover"), std::string::npos);
  EXPECT_NE(refused.error().message.find("test change"), std::string::npos);
  auto second =
      Transaction::begin(m_venv, *m_lock, ChangeSet{"x", *make_staging_dir(m_venv), {}, {}});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ExitCode::locked);
  auto report = recover(m_venv, *m_lock);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->outcome, RecoverOutcome::rolled_back);
  EXPECT_EQ(fingerprint(m_venv), before);
  EXPECT_TRUE(require_no_unfinished_transaction(m_venv));
  auto again = txn->roll_back();  // idempotent after recover did the work
  EXPECT_TRUE(again) << again.error().message;
}

TEST_F(TxnTransaction, RefusesUnsafePathsAndMissingStagedFiles) {
  auto staging = make_staging_dir(m_venv);
  ASSERT_TRUE(staging);
  for (std::string bad : {"../escape", "/abs", ".venvfix/lock", ""}) {
    auto txn = Transaction::begin(m_venv, *m_lock, ChangeSet{"bad", *staging, {}, {bad}});
    EXPECT_FALSE(txn) << bad;
  }
  auto missing =
      Transaction::begin(m_venv, *m_lock, ChangeSet{"bad", *staging, {k_site + "/x.py"}, {}});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("x.py is not a staged file"), std::string::npos);
  write_text(*staging / k_site / "pkg/__init__.py/inner.py", "z");
  auto file_to_dir = Transaction::begin(
      m_venv, *m_lock, ChangeSet{"bad", *staging, {k_site + "/pkg/__init__.py/inner.py"}, {}});
  ASSERT_FALSE(file_to_dir);
  EXPECT_FALSE(fs::exists(journal_dir(m_venv)));
}

TEST_F(TxnTransaction, SecondLockFailsFastNamingTheHolder) {
  auto second = VenvLock::acquire(m_venv, LockWait::fail);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ExitCode::locked);
  EXPECT_NE(second.error().message.find(m_venv.root.string()), std::string::npos);
  EXPECT_NE(second.error().message.find(std::to_string(::getpid())), std::string::npos);
  m_lock.reset();
  EXPECT_TRUE(VenvLock::acquire(m_venv, LockWait::fail));
}

}  // namespace
}  // namespace venvfix::txn
