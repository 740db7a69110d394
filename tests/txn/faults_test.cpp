// Faults during a transaction: a file that cannot be moved, and a full filesystem. Each ends
// with one clear error and the venv exactly as before.
#include <sys/mount.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "support/world.hpp"
#include "txn/txn_test_support.hpp"
#include "venvfix/txn/journal.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/snapshot.hpp"
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
using testing::write_text;

TEST(TxnFaults, FileThatCannotBeMovedRollsBackWithItsName) {
  auto dir = TempDir::create("venvfix-fault-test-");
  ASSERT_TRUE(dir);
  env::Venv venv = make_small_venv(dir->path());
  fs::path stuck = venv.root / k_site / "other/mod.py";
  // Root ignores permission bits; the immutable attribute stops even root. Otherwise a
  // read-only directory does.
  bool immutable = ::geteuid() == 0;
  if (immutable) {
    auto set = venvfix::testing::run_command({"chattr", "+i", stuck.string()});
    if (set.exit_code != 0) GTEST_SKIP() << "chattr +i not supported here: " << set.err;
  } else {
    fs::permissions(stuck.parent_path(), fs::perms(0555));
  }
  auto before = fingerprint(venv);
  auto lock = VenvLock::acquire(venv, LockWait::fail);
  ASSERT_TRUE(lock);
  auto txn = Transaction::begin(venv, *lock, replace_and_remove(venv));
  ASSERT_TRUE(txn) << txn.error().message;
  // Not behind ASSERT_NO_FATAL_FAILURE: the immutable file must be freed again either way.
  expect_execute_fails_then_rolls_back(*txn, {stuck.string()});
  if (immutable) {
    EXPECT_EQ(venvfix::testing::run_command({"chattr", "-i", stuck.string()}).exit_code, 0);
  } else {
    fs::permissions(stuck.parent_path(), fs::perms(0755));
  }
  expect_venv_is(venv, before);
  EXPECT_FALSE(fs::exists(journal_file(venv)));
}

// A small tmpfs holding the venv, filled up at the worst moments.
class TxnEnospc : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
    auto dir = TempDir::create("venvfix-enospc-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
    m_mount = m_dir->path() / "mnt";
    fs::create_directories(m_mount);
    if (::mount("tmpfs", m_mount.c_str(), "tmpfs", 0, "size=1m,nr_inodes=400") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here: " << errno_message(errno);
    }
    m_mounted = true;
  }
  void TearDown() override {
    if (m_mounted) ::umount2(m_mount.c_str(), MNT_DETACH);
  }
  // Uses up every data page and inode left on the tmpfs.
  void fill() {
    fs::create_directories(m_mount / "filler");
    write_text(m_mount / "filler/big", std::string(2 << 20, 'x'));
    for (int i = 0; i < 1000; ++i) {
      std::FILE* f = std::fopen((m_mount / fmt::format("filler/i{}", i)).c_str(), "w");
      if (f == nullptr) break;
      std::fclose(f);
    }
  }
  std::optional<TempDir> m_dir;
  fs::path m_mount;
  bool m_mounted = false;
};

TEST_F(TxnEnospc, FullBeforeTheJournalChangesNothing) {
  env::Venv venv = make_small_venv(m_mount);
  auto lock = VenvLock::acquire(venv, LockWait::fail);
  ASSERT_TRUE(lock);
  ChangeSet changes = replace_and_remove(venv);
  auto before = fingerprint(venv);
  fill();
  ASSERT_NO_FATAL_FAILURE(expect_begin_refused(Transaction::begin(venv, *lock, changes), venv,
                                               before, "No space left on device"));
  auto snapshot = create_snapshot(venv, *lock, "full");
  ASSERT_FALSE(snapshot);
  EXPECT_NE(snapshot.error().message.find("No space left on device"), std::string::npos)
      << snapshot.error().message;
  auto listed = list_snapshots(venv);
  ASSERT_TRUE(listed);
  EXPECT_TRUE(listed->empty());
  EXPECT_EQ(fingerprint(venv), before);
}

TEST_F(TxnEnospc, FullDuringExecuteRollsBack) {
  env::Venv venv = make_small_venv(m_mount);
  auto lock = VenvLock::acquire(venv, LockWait::fail);
  ASSERT_TRUE(lock);
  auto before = fingerprint(venv);
  auto txn = Transaction::begin(venv, *lock, replace_and_remove(venv));
  ASSERT_TRUE(txn) << txn.error().message;
  fill();  // the snapshot directory and the new package directory cannot be created now
  ASSERT_NO_FATAL_FAILURE(expect_execute_fails_then_rolls_back(*txn, {"No space left on device"}));
  expect_venv_is(venv, before);
}

}  // namespace
}  // namespace venvfix::txn
