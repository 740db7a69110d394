// The link store shared by format 2 tree snapshots: a later snapshot links only what is new, a
// rollback moves only what differs (and puts back the very inodes the snapshot recorded), a file
// changed in place is named and refused, delete and prune drop the links nothing references.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>

#include "txn/txn_test_support.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {
namespace {

using testing::Entries;
using testing::fingerprint;
using testing::inodes_of;
using testing::k_site;
using testing::make_small_venv;
using testing::read_text;
using testing::write_text;

std::size_t count_entries(const fs::path& dir) {
  std::size_t n = 0;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) ++n;
  return n;
}

class TxnSnapshotStore : public testing::LockedVenvTest {
 protected:
  TxnSnapshotStore() : LockedVenvTest("venvfix-store-test-") {}
  fs::path store() const { return m_venv.state_dir() / "store"; }
  SnapshotInfo snapshot(const std::string& reason) {
    auto info = create_snapshot(m_venv, *m_lock, reason);
    EXPECT_TRUE(info) << info.error().message;
    return info ? *info : SnapshotInfo{};
  }
  // What pip does to a file it reinstalls: a new file renamed over the old name.
  void replace(const std::string& rel, const std::string& text) {
    write_text(site() / (rel + ".tmp"), text);
    fs::rename(site() / (rel + ".tmp"), site() / rel);
  }
};

TEST_F(TxnSnapshotStore, FirstSnapshotLinksEveryFileASecondOneNothing) {
  SnapshotInfo first = snapshot("first");
  EXPECT_EQ(first.format, 2);
  EXPECT_EQ(first.linked, 7u);  // 7 regular files; the symlink and directories are manifest lines
  EXPECT_EQ(count_entries(store()), 7u);
  EXPECT_FALSE(fs::exists(snapshots_dir(m_venv) / first.id / "files"));
  SnapshotInfo second = snapshot("second");
  EXPECT_EQ(second.linked, 0u);
  EXPECT_EQ(second.files, first.files);
  EXPECT_EQ(count_entries(store()), 7u);
  replace("pkg/__init__.py", "x = 2\n");
  SnapshotInfo third = snapshot("third");
  EXPECT_EQ(third.linked, 1u);
  EXPECT_EQ(count_entries(store()), 8u);
  // Each restores its own state, from the one store.
  ASSERT_TRUE(restore_snapshot(m_venv, *m_lock, first.id, KeepSnapshot::no));
  EXPECT_EQ(read_text(site() / "pkg/__init__.py"), "x = 1\n");
  ASSERT_TRUE(restore_snapshot(m_venv, *m_lock, third.id, KeepSnapshot::no));
  EXPECT_EQ(read_text(site() / "pkg/__init__.py"), "x = 2\n");
}

TEST_F(TxnSnapshotStore, RollbackMovesOnlyWhatDiffersAndPutsBackTheSameInodes) {
  auto before = fingerprint(m_venv);
  auto inodes_before = inodes_of(m_venv.root, Entries::regular_files);
  SnapshotInfo info = snapshot("before pip");
  replace("pkg/__init__.py", "reinstalled\n");
  fs::remove(site() / "pkg/lib/libpkg.so");
  fs::create_symlink("elsewhere", site() / "pkg/lib/libpkg.so");
  fs::remove_all(site() / "pkg/sub");
  write_text(site() / "newpkg/x.py", "new\n");
  auto undo = restore_snapshot(m_venv, *m_lock, info.id, KeepSnapshot::yes);
  ASSERT_TRUE(undo) << undo.error().message;
  auto after = fingerprint(m_venv);
  EXPECT_EQ(after, before) << describe_difference(before, after);
  EXPECT_EQ(inodes_of(m_venv.root, Entries::regular_files), inodes_before)
      << "the stored inodes were not put back";
  // What the rollback moved out: the replaced file, the wrong symlink and the new file.
  ASSERT_TRUE(undo->has_value());
  auto kept = find_snapshot(m_venv, **undo);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->files, 3u);
  // Nothing differs now: a second rollback moves nothing and keeps no undo snapshot.
  auto again = restore_snapshot(m_venv, *m_lock, info.id, KeepSnapshot::yes);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->has_value());
}

TEST_F(TxnSnapshotStore, FileChangedInPlaceIsNamedAndNothingChanges) {
  SnapshotInfo info = snapshot("test");
  fs::remove_all(site() / "pkg/sub");  // something a rollback would put back
  // Written through its venv name: the store's link shares the inode, the old bytes are gone.
  write_text(site() / "other/mod.py", "y = 3  # edited in place\n");
  write_text(site() / "pkg/__init__.py", "x = 11\n");
  auto print = fingerprint(m_venv);
  auto restored = restore_snapshot(m_venv, *m_lock, info.id, KeepSnapshot::yes);
  ASSERT_FALSE(restored);
  EXPECT_EQ(restored.error().code, ExitCode::error);
  const std::string& message = restored.error().message;
  EXPECT_NE(message.find((site() / "other/mod.py").string()), std::string::npos) << message;
  EXPECT_NE(message.find((site() / "pkg/__init__.py").string()), std::string::npos) << message;
  EXPECT_NE(message.find("changed in place"), std::string::npos) << message;
  EXPECT_NE(message.find("nothing was changed"), std::string::npos) << message;
  EXPECT_EQ(fingerprint(m_venv), print) << "a refused restore changed the venv";
  EXPECT_FALSE(fs::exists(m_venv.state_dir() / "staging") &&
               count_entries(m_venv.state_dir() / "staging") != 0);
  // A snapshot taken after the change records the new identities: the same two inodes get a
  // store name each for them.
  SnapshotInfo later = snapshot("after the edit");
  EXPECT_EQ(later.linked, 2u);
}

TEST_F(TxnSnapshotStore, DeleteAndPruneDropStoreLinksNoSnapshotReferences) {
  SnapshotInfo first = snapshot("first");
  replace("pkg/__init__.py", "x = 2\n");
  replace("other/mod.py", "y = 3\n");
  SnapshotInfo second = snapshot("second");
  EXPECT_EQ(second.linked, 2u);
  EXPECT_EQ(count_entries(store()), 9u);
  // An interrupted create leaves links without a manifest: prune drops them too.
  write_text(site() / "stray.py", "stray\n");
  ASSERT_EQ(::link((site() / "stray.py").c_str(), (store() / "stray-link").c_str()), 0);
  ASSERT_TRUE(delete_snapshot(m_venv, *m_lock, first.id));
  // The two replaced files' old inodes were referenced by `first` only.
  EXPECT_EQ(count_entries(store()), 7u);
  struct stat st {};
  ASSERT_EQ(::stat((site() / "pkg/__init__.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 2u) << "the venv's file and its one store link";
  auto pruned = prune_snapshots(m_venv, *m_lock, 0);
  ASSERT_TRUE(pruned) << pruned.error().message;
  EXPECT_EQ(*pruned, std::vector<std::string>{second.id});
  EXPECT_EQ(count_entries(store()), 0u);
  ASSERT_EQ(::stat((site() / "pkg/__init__.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u);
}

TEST_F(TxnSnapshotStore, ChmodAfterTheSnapshotIsRestoredWithTheRecordedMode) {
  SnapshotInfo info = snapshot("test");
  ASSERT_EQ(::chmod((site() / "pkg/lib/libpkg.so.1").c_str(), 0600), 0);
  auto restored = restore_snapshot(m_venv, *m_lock, info.id, KeepSnapshot::no);
  ASSERT_TRUE(restored) << restored.error().message;
  struct stat st {};
  ASSERT_EQ(::stat((site() / "pkg/lib/libpkg.so.1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(read_text(site() / "pkg/lib/libpkg.so.1"), std::string(5000, 'a'));
}

}  // namespace
}  // namespace venvfix::txn
