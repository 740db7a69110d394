// Snapshots: whole-venv (tree) and transaction snapshots, restored exactly (fingerprints).
#include "venvfix/txn/snapshot.hpp"

#include <gtest/gtest.h>

#include "txn/txn_test_support.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/transaction.hpp"

namespace venvfix::txn {
namespace {

using testing::fingerprint;
using testing::k_site;
using testing::make_small_venv;
using testing::read_text;
using testing::write_text;

class TxnSnapshot : public testing::LockedVenvTest {
 protected:
  TxnSnapshot() : LockedVenvTest("venvfix-snapshot-test-") {}

  // What `pip uninstall` and `pip install` do: unlink, replace by rename, new dirs.
  void mess_up() {
    fs::remove_all(site() / "pkg/sub");
    fs::remove(site() / "pkg/__init__.py");
    write_text(site() / "pkg/__init__.py.tmp", "replaced\n");
    fs::rename(site() / "pkg/__init__.py.tmp", site() / "pkg/__init__.py");
    write_text(site() / "newpkg/x/y.py", "new\n");
    fs::create_directories(site() / "emptydir");
    fs::remove(site() / "pkg/lib/libpkg.so");
    fs::create_symlink("elsewhere", site() / "pkg/lib/libpkg.so");
  }
};

TEST_F(TxnSnapshot, TreeSnapshotRestoresExactly) {
  auto before = fingerprint(m_venv);
  auto info = create_snapshot(m_venv, *m_lock, "test");
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->kind, SnapshotKind::tree);
  EXPECT_EQ(info->files, 8u);  // 7 files and 1 symlink
  EXPECT_EQ(fingerprint(m_venv), before) << "taking a snapshot changed the venv";
  mess_up();
  auto diff = diff_snapshot(m_venv, info->id);
  ASSERT_TRUE(diff) << diff.error().message;
  EXPECT_EQ(diff->changed,
            (std::vector<std::string>{k_site + "/pkg/__init__.py", k_site + "/pkg/lib/libpkg.so"}));
  EXPECT_EQ(diff->removed.size(), 3u);  // data.txt, sub/, sub/deep/
  EXPECT_EQ(diff->added.size(), 4u);    // emptydir, newpkg, newpkg/x, newpkg/x/y.py
  auto undo = restore_snapshot(m_venv, *m_lock, info->id, KeepSnapshot::yes);
  ASSERT_TRUE(undo) << undo.error().message;
  auto after = fingerprint(m_venv);
  EXPECT_EQ(after, before) << describe_difference(before, after);
  // The tree snapshot is kept; the rollback itself is kept too and can be undone.
  auto listed = list_snapshots(m_venv);
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 2u);
  ASSERT_TRUE(undo->has_value());
  EXPECT_EQ(listed->back().id, **undo);
  EXPECT_EQ(listed->back().kind, SnapshotKind::transaction);
  ASSERT_TRUE(restore_snapshot(m_venv, *m_lock, **undo, KeepSnapshot::no));
  EXPECT_EQ(read_text(site() / "pkg/__init__.py"), "replaced\n");
  EXPECT_TRUE(fs::is_directory(site() / "emptydir"));
  EXPECT_FALSE(fs::exists(site() / "pkg/sub"));
  // And the kept tree snapshot restores again, exactly.
  auto again = restore_snapshot(m_venv, *m_lock, info->id, KeepSnapshot::no);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(fingerprint(m_venv), before);
  auto diff_after = diff_snapshot(m_venv, info->id);
  ASSERT_TRUE(diff_after);
  EXPECT_TRUE(diff_after->added.empty() && diff_after->removed.empty() &&
              diff_after->changed.empty());
}

TEST_F(TxnSnapshot, InPlaceChangeOfALinkedFileIsRefusedNamingIt) {
  auto info = create_snapshot(m_venv, *m_lock, "test");
  ASSERT_TRUE(info) << info.error().message;
  if (info->method != "hardlink") GTEST_SKIP() << "filesystem clones; no shared inodes";
  write_text(site() / "other/mod.py", "y = 3  # edited in place\n");
  auto print = fingerprint(m_venv);
  auto restored = restore_snapshot(m_venv, *m_lock, info->id, KeepSnapshot::no);
  ASSERT_FALSE(restored);
  EXPECT_NE(restored.error().message.find(k_site + "/other/mod.py was changed in place"),
            std::string::npos)
      << restored.error().message;
  EXPECT_EQ(fingerprint(m_venv), print) << "a refused restore changed the venv";
}

TEST_F(TxnSnapshot, TransactionSnapshotUndoesTheTransaction) {
  auto before = fingerprint(m_venv);
  auto staging = make_staging_dir(m_venv);
  ASSERT_TRUE(staging);
  write_text(*staging / k_site / "pkg/__init__.py", "x = 2\n");
  write_text(*staging / k_site / "fresh/a.py", "a\n");
  fs::create_directories(site() / "was_empty");
  before = fingerprint(m_venv);
  write_text(*staging / k_site / "was_empty/in.py", "in\n");
  ChangeSet changes{
      "replace",
      *staging,
      {k_site + "/pkg/__init__.py", k_site + "/fresh/a.py", k_site + "/was_empty/in.py"},
      {k_site + "/pkg/sub/deep/data.txt"}};
  auto txn = Transaction::begin(m_venv, *m_lock, changes);
  ASSERT_TRUE(txn) << txn.error().message;
  ASSERT_TRUE(txn->execute());
  auto id = txn->commit(KeepSnapshot::yes);
  ASSERT_TRUE(id && id->has_value());
  auto found = find_snapshot(m_venv, std::nullopt);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, **id);
  EXPECT_EQ(found->files, 2u);
  ASSERT_TRUE(rollback_to(m_venv, *m_lock, **id));
  auto after = fingerprint(m_venv);
  EXPECT_EQ(after, before) << describe_difference(before, after);
}

TEST_F(TxnSnapshot, DeleteAndPrune) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto info = create_snapshot(m_venv, *m_lock, "n" + std::to_string(i));
    ASSERT_TRUE(info);
    ids.push_back(info->id);
  }
  fs::create_directories(snapshots_dir(m_venv) / "garbage-without-manifest");
  ASSERT_TRUE(delete_snapshot(m_venv, *m_lock, ids[1]));
  auto missing = delete_snapshot(m_venv, *m_lock, ids[1]);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ExitCode::usage);
  auto pruned = prune_snapshots(m_venv, *m_lock, 1);
  ASSERT_TRUE(pruned);
  EXPECT_EQ(*pruned, std::vector<std::string>{ids[0]});
  EXPECT_FALSE(fs::exists(snapshots_dir(m_venv) / "garbage-without-manifest"));
  auto listed = list_snapshots(m_venv);
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().id, ids[2]);
}

}  // namespace
}  // namespace venvfix::txn
