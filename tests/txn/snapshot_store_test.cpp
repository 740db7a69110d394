// The link store shared by format 2 and 3 tree snapshots: a later snapshot links only what is new
// and reads only the directories that changed, a rollback moves only what differs (and puts back
// the very inodes the snapshot recorded), a file changed in place is named and refused, delete and
// prune drop the links nothing references.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include "txn/link_store.hpp"
#include "txn/manifest.hpp"
#include "txn/snapshot_state.hpp"
#include "txn/txn_test_support.hpp"
#include "venvfix/txn/journal.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/snapshot.hpp"
#include "venvfix/txn/step_fs.hpp"

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
 public:
  // Directories of make_small_venv, its root included.
  static constexpr std::size_t k_dirs = 11;

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

// Lets the filesystem's clock move past everything written so far: a directory changed in the
// clock tick a walk began in is read again by the next walk, never carried over.
void settle() {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

bool no_difference(const env::Venv& venv, const std::string& id) {
  auto diff = diff_snapshot(venv, id);
  EXPECT_TRUE(diff) << diff.error().message;
  return diff && diff->added.empty() && diff->removed.empty() && diff->changed.empty();
}

TEST_F(TxnSnapshotStore, FirstSnapshotLinksEveryFileASecondOneNothing) {
  SnapshotInfo first = snapshot("first");
  EXPECT_EQ(first.format, 3);
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
  // A snapshot taken after the change holds the edited files as they are: pkg/ changed, so it
  // is read again and __init__.py linked under its new identity; other/ did not, so mod.py's
  // older identity is carried over, and its ctime (older than the walk) says it is the same file.
  settle();
  SnapshotInfo later = snapshot("after the edit");
  EXPECT_EQ(later.linked, 1u);
  EXPECT_TRUE(no_difference(m_venv, later.id));
}

// A restore from the store stages links (and, for a file chmod'ed since, a copy) and then the
// journal that names them: every staged name must be durable before that journal is written (a
// move_in whose staged name a power cut lost would read as done, and its undo would take the
// venv's file), so each directory a staged name is in, up to .venvfix, is fsync'ed after the
// name was made, and a copy's bytes are. The links' data is the snapshot's, already durable: no
// syncfs, which would wait for everything else being written (after a pip install, all of it).
TEST_F(TxnSnapshotStore, ARestoreMakesEachStagedNameDurableBeforeItsJournalAndNoMore) {
  auto before = fingerprint(m_venv);
  SnapshotInfo info = snapshot("before pip");
  replace("pkg/__init__.py", "reinstalled\n");
  replace("other/mod.py", "reinstalled\n");
  fs::remove_all(site() / "pkg/sub");  // put back two directories deep
  fs::remove(site() / "pkg/lib/libpkg.so");
  fs::create_symlink("elsewhere", site() / "pkg/lib/libpkg.so");
  ASSERT_EQ(::chmod((site() / "pkg/lib/libpkg.so.1").c_str(), 0600), 0);  // copied, not linked
  RealStepFs real;
  FaultStepFs recorder(real, FaultStepFs::never, FaultStepFs::Fault::crash);
  auto restored = restore_snapshot(m_venv, *m_lock, info.id, KeepSnapshot::no, recorder);
  ASSERT_TRUE(restored) << restored.error().message;
  EXPECT_EQ(fingerprint(m_venv), before);

  const std::vector<FaultStepFs::Record> records = recorder.records();
  const auto journal = std::find_if(records.begin(), records.end(), [](const auto& record) {
    return record.op == StepFs::Op::write && record.path.find("journal") != std::string::npos;
  });
  ASSERT_NE(journal, records.end());
  // Whether `path` was fsync'ed (or fdatasync'ed) after record `after` and before the journal.
  auto synced_after = [&](const std::string& path, auto after) {
    return std::any_of(after + 1, journal, [&](const FaultStepFs::Record& record) {
      return record.op == StepFs::Op::sync && record.path == path;
    });
  };
  std::size_t staged = 0;
  for (auto record = records.begin(); record != journal; ++record) {
    const bool link = record->op == StepFs::Op::link;
    if (!link && record->op != StepFs::Op::symlink) continue;
    const std::string name = link ? record->to : record->path;
    ASSERT_TRUE(name.starts_with(".venvfix/staging/")) << name;
    ++staged;
    for (std::string dir = fs::path(name).parent_path().string(); !dir.empty();
         dir = fs::path(dir).parent_path().string()) {
      EXPECT_TRUE(synced_after(dir, record)) << dir << " (holding " << name << ") was not fsync'ed";
    }
  }
  EXPECT_EQ(staged, 4u) << "the store links of __init__.py, mod.py and data.txt, the symlink";
  const std::string copy_suffix = "/" + k_site + "/pkg/lib/libpkg.so.1";
  EXPECT_TRUE(std::any_of(records.begin(), journal, [&](const FaultStepFs::Record& record) {
    return record.op == StepFs::Op::sync && record.path.starts_with(".venvfix/staging/") &&
           record.path.ends_with(copy_suffix);
  })) << "the copy with the recorded mode was not made durable";
  EXPECT_TRUE(std::none_of(records.begin(), records.end(), [](const FaultStepFs::Record& record) {
    return record.op == StepFs::Op::sync_fs;
  })) << "a restore waited for the whole filesystem";
}

// A directory of staged names whose fsync fails (an I/O error) stops the restore before its
// journal: one error naming that directory, the staging tree removed, no journal, the venv as it
// was.
TEST_F(TxnSnapshotStore, AStagedNameThatCannotBeMadeDurableStopsTheRestoreBeforeItsJournal) {
  SnapshotInfo info = snapshot("before pip");
  replace("pkg/__init__.py", "reinstalled\n");
  fs::remove_all(site() / "pkg/sub");
  auto print = fingerprint(m_venv);
  RealStepFs real;
  FaultStepFs failing(real, 0, FaultStepFs::Fault::fail_once, EIO);
  failing.only({StepFs::Op::sync});
  auto restored = restore_snapshot(m_venv, *m_lock, info.id, KeepSnapshot::no, failing);
  ASSERT_FALSE(restored);
  EXPECT_EQ(restored.error().code, ExitCode::error);
  const std::string& message = restored.error().message;
  EXPECT_TRUE(message.starts_with(m_venv.state_dir().string())) << message;
  EXPECT_NE(message.find(": fsync: Input/output error"), std::string::npos) << message;
  EXPECT_EQ(fingerprint(m_venv), print) << "a restore that stopped changed the venv";
  EXPECT_FALSE(fs::exists(journal_file(m_venv)));
  EXPECT_EQ(count_entries(m_venv.state_dir() / "staging"), 0u);
  // The disk is well again: the same snapshot restores.
  ASSERT_TRUE(restore_snapshot(m_venv, *m_lock, info.id, KeepSnapshot::no));
  EXPECT_TRUE(no_difference(m_venv, info.id));
}

// A directory unchanged since the snapshot's walk is not read by the rollback's comparison (its
// names and their inodes are the walk's), but every file in it is still stat'ed: a write in place
// does not change the directory, and must still be named.
TEST_F(TxnSnapshotStore, ARollbackReadsOnlyChangedDirectoriesYetNamesAFileWrittenInPlace) {
  settle();  // every directory older than the walk's clock
  SnapshotInfo info = snapshot("test");
  write_text(site() / "other/mod.py", "y = 3  # edited in place\n");  // other/ unchanged
  replace("pkg/__init__.py", "x = 2\n");                              // pkg/ changed
  auto manifest = load_manifest(m_venv, info.id);
  ASSERT_TRUE(manifest) << manifest.error().message;
  auto delta = compare_with_venv(m_venv, *manifest);
  ASSERT_TRUE(delta) << delta.error().message;
  // Read: the root (it holds .venvfix/, never unchanged) and pkg/. The other nine: not read.
  EXPECT_EQ(delta->dirs_read, 2u);
  EXPECT_EQ(delta->dirs_unchanged, k_dirs - 2);
  const std::vector<std::string> both = {k_site + "/other/mod.py", k_site + "/pkg/__init__.py"};
  EXPECT_EQ(delta->put_back, both);
  EXPECT_EQ(delta->changed, both);
  EXPECT_TRUE(delta->added_files.empty());
  auto print = fingerprint(m_venv);
  auto restored = restore_snapshot(m_venv, *m_lock, info.id, KeepSnapshot::yes);
  ASSERT_FALSE(restored);
  EXPECT_NE(
      restored.error().message.find((site() / "other/mod.py").string() + " was changed in place"),
      std::string::npos)
      << restored.error().message;
  EXPECT_EQ(fingerprint(m_venv), print) << "a refused restore changed the venv";
}

// Listing reads each snapshot's header only, one page first: a reason longer than that (a long
// command line) or than the 64 KiB read next still lists whole.
TEST_F(TxnSnapshotStore, ASnapshotWhoseReasonOutgrowsTheFirstReadIsListedWhole) {
  std::vector<SnapshotInfo> made;
  for (std::size_t size : {100, 6000, 70000}) {
    made.push_back(snapshot("run: pip install " + std::string(size, 'x')));
  }
  auto listed = list_snapshots(m_venv);
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), made.size());
  for (std::size_t i = 0; i < made.size(); ++i) {
    SCOPED_TRACE(made[i].reason.size());
    EXPECT_EQ((*listed)[i].id, made[i].id);
    EXPECT_EQ((*listed)[i].reason, made[i].reason);
    EXPECT_EQ((*listed)[i].files, made[i].files);
    EXPECT_EQ((*listed)[i].bytes, made[i].bytes);
  }
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

// A later snapshot reads only the directories whose entries changed since the last walk (pip's
// writes are renames and unlinks: they change their directory); the others' entries are carried
// over. Every snapshot still restores exactly its own state.
TEST_F(TxnSnapshotStore, LaterSnapshotReadsOnlyTheDirectoriesThatChanged) {
  settle();
  SnapshotInfo first = snapshot("first");
  EXPECT_EQ(first.dirs_listed, k_dirs);
  EXPECT_EQ(first.dirs_carried, 0u);
  auto first_print = fingerprint(m_venv);
  settle();
  SnapshotInfo second = snapshot("second");
  EXPECT_EQ(second.dirs_listed, 1u) << "only the root is always read";
  EXPECT_EQ(second.dirs_carried, k_dirs - 1);
  EXPECT_EQ(second.files, first.files);
  EXPECT_EQ(second.linked, 0u);
  replace("pkg/__init__.py", "x = 2\n");
  fs::remove_all(site() / "pkg/sub");
  write_text(site() / "newpkg/x.py", "new\n");
  auto third_print = fingerprint(m_venv);
  settle();
  SnapshotInfo third = snapshot("third");
  // The root, site-packages (newpkg/ added), pkg/ (a rename over a name, a removal), newpkg/.
  EXPECT_EQ(third.dirs_listed, 4u);
  EXPECT_EQ(third.linked, 2u);
  EXPECT_TRUE(no_difference(m_venv, third.id));
  ASSERT_TRUE(restore_snapshot(m_venv, *m_lock, first.id, KeepSnapshot::no));
  EXPECT_EQ(fingerprint(m_venv), first_print);
  ASSERT_TRUE(restore_snapshot(m_venv, *m_lock, third.id, KeepSnapshot::no));
  EXPECT_EQ(fingerprint(m_venv), third_print);
  // Without the last walk (walk-base gone) every directory is read again: pkg/sub and
  // pkg/sub/deep are gone, newpkg/ is new.
  fs::remove(m_venv.state_dir() / "walk-base");
  EXPECT_EQ(snapshot("full").dirs_listed, k_dirs - 1);
}

// A later snapshot takes it that the store still holds every file of the last walk only while
// the store directory is as that walk left it (store-state): after delete or prune dropped links
// (straight after the walk: in its clock tick), or a link removed by hand, it reads the store and
// links again what is gone.
TEST_F(TxnSnapshotStore, ALaterSnapshotLinksAgainWhatTheStoreLostSinceTheLastWalk) {
  settle();
  SnapshotInfo first = snapshot("first");
  EXPECT_TRUE(first.store_read);
  EXPECT_EQ(first.linked, 7u);
  ASSERT_TRUE(delete_snapshot(m_venv, *m_lock, first.id));
  EXPECT_EQ(count_entries(store()), 0u);
  settle();
  SnapshotInfo second = snapshot("second");
  EXPECT_EQ(second.dirs_carried, k_dirs - 1);
  EXPECT_TRUE(second.store_read);
  EXPECT_EQ(second.linked, 7u) << "carried-over files whose links were dropped";
  EXPECT_EQ(count_entries(store()), 7u);
  settle();
  SnapshotInfo third = snapshot("third");
  EXPECT_FALSE(third.store_read) << "nothing dropped since the last walk";
  EXPECT_EQ(third.linked, 0u);
  // A link removed by hand changes the store directory.
  settle();
  fs::path one = fs::directory_iterator(store())->path();
  ASSERT_TRUE(fs::remove(one));
  settle();
  SnapshotInfo fourth = snapshot("fourth");
  EXPECT_TRUE(fourth.store_read);
  EXPECT_EQ(fourth.linked, 1u);
  EXPECT_TRUE(fs::exists(one));
  // Each of them restores its state from the store.
  auto before = fingerprint(m_venv);
  replace("pkg/__init__.py", "x = 2\n");
  fs::remove_all(site() / "pkg/sub");
  ASSERT_TRUE(restore_snapshot(m_venv, *m_lock, third.id, KeepSnapshot::no));
  EXPECT_EQ(fingerprint(m_venv), before);
}

// A later snapshot copies the last walk's lines of the files and symlinks in a carried-over
// directory as they are, without reading them whole: names with characters the manifest escapes
// (a directory and a file with '%', a tab and a newline, a symlink whose target has them) must
// still be found under their directory, and the snapshot must hold what a full walk holds.
TEST_F(TxnSnapshotStore, ALaterSnapshotCarriesEscapedNamesAsAFullWalkRecordsThem) {
  const fs::path odd = site() / "we%ird\tdir";
  write_text(odd / "a%25b\nc.py", "odd = 1\n");
  write_text(odd / "deeper%/x.py", "x = 1\n");
  fs::create_symlink("t%\ty", odd / "link%09");
  settle();
  SnapshotInfo first = snapshot("first");
  auto print = fingerprint(m_venv);
  settle();
  SnapshotInfo later = snapshot("later");
  EXPECT_EQ(later.dirs_listed, 1u);
  EXPECT_EQ(later.dirs_carried, k_dirs + 1);
  EXPECT_EQ(later.files, first.files);
  EXPECT_EQ(later.bytes, first.bytes);
  auto full_walk = load_manifest(m_venv, first.id);
  auto carried = load_manifest(m_venv, later.id);
  ASSERT_TRUE(full_walk && carried);
  auto state = [](const Manifest& manifest) {
    std::map<std::string, std::string> out;
    for (const ManifestEntry& e : manifest.entries) {
      out[e.path] = fmt::format("{} {:o} {} {} {}", e.type, e.mode, e.size, e.ino, e.target);
    }
    return out;
  };
  EXPECT_EQ(state(*carried), state(*full_walk));
  // It restores them.
  fs::remove_all(odd);
  auto restored = restore_snapshot(m_venv, *m_lock, later.id, KeepSnapshot::no);
  ASSERT_TRUE(restored) << restored.error().message;
  EXPECT_EQ(fingerprint(m_venv), print);
}

// walk-base's lines are copied unread only while the store-state record shows it is the text this
// venvfix wrote: a walk-base changed since, even in place (same inode), is read whole, and one with
// a bad line is not used at all (the next snapshot reads every directory), so a bad line is never
// copied into a snapshot that no restore could then read.
TEST_F(TxnSnapshotStore, AWalkBaseChangedSinceItWasWrittenIsReadWholeAndABadOneNotUsed) {
  settle();
  snapshot("first");
  const fs::path walk_base = m_venv.state_dir() / "walk-base";
  std::string text = read_text(walk_base);
  // Corrupt the inode field of other/mod.py's line, which a carried-over line's copy never reads.
  const std::size_t line = text.find(" lib/python3.12/site-packages/other/mod.py\n");
  ASSERT_NE(line, std::string::npos);
  std::size_t field = text.rfind('\n', line) + 1;
  for (int spaces = 0; spaces < 4; ++field) spaces += text[field] == ' ' ? 1 : 0;
  text[field] = 'x';
  {
    std::ofstream out(walk_base, std::ios::in | std::ios::out | std::ios::binary);
    out.seekp(static_cast<std::streamoff>(field));
    out.put('x');
  }
  EXPECT_EQ(read_text(walk_base), text);
  auto print = fingerprint(m_venv);
  settle();
  SnapshotInfo later = snapshot("later");
  EXPECT_EQ(later.dirs_listed, k_dirs) << "a walk-base with a bad line carries nothing over";
  EXPECT_EQ(later.dirs_carried, 0u);
  // The snapshot it made reads back and restores.
  fs::remove_all(site() / "other");
  auto restored = restore_snapshot(m_venv, *m_lock, later.id, KeepSnapshot::no);
  ASSERT_TRUE(restored) << restored.error().message;
  EXPECT_EQ(fingerprint(m_venv), print);
  // A good walk-base changed in place (the same bytes written again) is read whole and used.
  settle();
  snapshot("third");
  text = read_text(walk_base);
  {
    std::ofstream out(walk_base, std::ios::in | std::ios::out | std::ios::binary);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  settle();
  SnapshotInfo fourth = snapshot("fourth");
  EXPECT_EQ(fourth.dirs_carried, k_dirs - 1);
  EXPECT_TRUE(fourth.store_read) << "the record no longer vouches for walk-base";
  EXPECT_TRUE(no_difference(m_venv, fourth.id));
}

// A file written in place or chmod'ed leaves its directory as it was, so the next snapshot carries
// the file's older identity over. Its ctime shows the change came before that snapshot's walk: the
// snapshot restores the file as it was when it was taken.
TEST_F(TxnSnapshotStore, FileChangedInPlaceBeforeALaterSnapshotIsPartOfItsState) {
  settle();
  snapshot("first");
  write_text(site() / "other/mod.py", "y = 3  # edited in place\n");
  ASSERT_EQ(::chmod((site() / "pkg/lib/libpkg.so.1").c_str(), 0700), 0);
  auto print = fingerprint(m_venv);
  settle();
  SnapshotInfo later = snapshot("later");
  ASSERT_EQ(later.dirs_listed, 1u) << "other/ and pkg/lib/ were carried over";
  EXPECT_TRUE(no_difference(m_venv, later.id));
  // pip removes and adds around the two files.
  fs::remove_all(site() / "pkg/sub");
  write_text(site() / "newpkg/x.py", "new\n");
  auto restored = restore_snapshot(m_venv, *m_lock, later.id, KeepSnapshot::no);
  ASSERT_TRUE(restored) << restored.error().message;
  auto after = fingerprint(m_venv);
  EXPECT_EQ(after, print) << describe_difference(print, after);
}

// After the snapshot, a write in place through a carried-over file's name is seen (its ctime is
// newer than the walk) and refused, as for any file. So is a file changed in place before the
// snapshot whose name pip then replaced: the unlink moved the old inode's ctime past the walk, so
// nothing tells when the write happened, and the store no longer holds what the snapshot needs.
// Either way the venv is left exactly as it is: never a mix.
TEST_F(TxnSnapshotStore, InPlaceChangesACarriedOverSnapshotCannotPlaceAreRefused) {
  settle();
  snapshot("first");
  write_text(site() / "pkg/__init__.py", "x = 10  # before the snapshot\n");
  settle();
  SnapshotInfo later = snapshot("later");
  ASSERT_EQ(later.dirs_listed, 1u);
  write_text(site() / "other/mod.py", "y = 3  # after the snapshot\n");
  EXPECT_FALSE(no_difference(m_venv, later.id));
  replace("pkg/__init__.py", "x = 11  # pip\n");
  fs::remove_all(site() / "pkg/sub");
  auto print = fingerprint(m_venv);
  auto restored = restore_snapshot(m_venv, *m_lock, later.id, KeepSnapshot::yes);
  ASSERT_FALSE(restored);
  const std::string& message = restored.error().message;
  EXPECT_NE(message.find((site() / "other/mod.py").string()), std::string::npos) << message;
  EXPECT_NE(message.find((site() / "pkg/__init__.py").string()), std::string::npos) << message;
  EXPECT_NE(message.find("nothing was changed"), std::string::npos) << message;
  EXPECT_EQ(fingerprint(m_venv), print) << "a refused restore changed the venv";
}

// `run` compares the venv with the snapshot it just took from the manifest still in memory. That
// manifest must be what a reader of its text gets, the carried marks included: below a carried
// (`d`) directory the last walk's entries were not carried (it listed every directory), and a file
// the store lost since is stat'ed afresh, yet a reader marks both carried. And the comparison must
// name the same differences either way.
TEST_F(TxnSnapshotStore, ATakenSnapshotHoldsWhatItsManifestReadsBack) {
  settle();
  SnapshotInfo first = snapshot("first");
  ASSERT_TRUE(delete_snapshot(m_venv, *m_lock, first.id));  // the next walk links every file again
  replace("pkg/__init__.py", "x = 2\n");
  settle();
  auto taken = take_snapshot(m_venv, *m_lock, "taken");
  ASSERT_TRUE(taken) << taken.error().message;
  EXPECT_EQ(taken->info.dirs_listed, 2u) << "the root and pkg/";
  auto read = load_manifest(m_venv, taken->info.id);
  ASSERT_TRUE(read) << read.error().message;
  const Manifest& held = *taken->manifest;
  EXPECT_EQ(held.id, read->id);
  EXPECT_EQ(held.format, read->format);
  EXPECT_EQ(held.walked_ns, read->walked_ns);
  ASSERT_EQ(held.entries.size(), read->entries.size());
  std::size_t carried = 0;
  for (std::size_t i = 0; i < held.entries.size(); ++i) {
    const ManifestEntry& a = held.entries[i];
    const ManifestEntry& b = read->entries[i];
    EXPECT_EQ(std::tie(a.type, a.mode, a.size, a.dev, a.ino, a.nlink, a.mtime_ns, a.ctime_ns,
                       a.path, a.target, a.carried),
              std::tie(b.type, b.mode, b.size, b.dev, b.ino, b.nlink, b.mtime_ns, b.ctime_ns,
                       b.path, b.target, b.carried))
        << "entry " << i << ": " << a.path;
    if (a.type != 'D' && b.carried) ++carried;
  }
  EXPECT_GE(carried, 4u) << "files below carried directories";
  // After a change in place, a replacement and a new file, both comparisons say the same.
  write_text(site() / "other/mod.py", "y = 3  # edited in place\n");
  replace("pkg/lib/libpkg.so.1", "new bytes");
  write_text(site() / "newpkg/x.py", "new\n");
  auto from_memory = diff_snapshot(m_venv, *taken);
  auto from_disk = diff_snapshot(m_venv, taken->info.id);
  ASSERT_TRUE(from_memory && from_disk);
  EXPECT_EQ(from_memory->added, from_disk->added);
  EXPECT_EQ(from_memory->removed, from_disk->removed);
  EXPECT_EQ(from_memory->changed, from_disk->changed);
  EXPECT_EQ(from_memory->changed.size(), 2u);
  EXPECT_EQ(from_memory->added.size(), 2u) << "newpkg/ and newpkg/x.py";
}

// Deleting the snapshot `run` just took drops exactly the store links it added, and reads no
// other snapshot: here an older snapshot's manifest is unreadable, which makes the general drop
// (delete_snapshot's) keep every link, as it cannot know what that snapshot needs, but does not
// stop this one. What the
// older snapshots need stays, and they still restore.
TEST_F(TxnSnapshotStore, DeletingATakenSnapshotDropsOnlyTheLinksItAdded) {
  settle();
  SnapshotInfo first = snapshot("first");
  auto first_print = fingerprint(m_venv);
  settle();
  SnapshotInfo second = snapshot("second");
  const std::size_t links_before = count_entries(store());
  replace("pkg/__init__.py", "x = 2\n");
  write_text(site() / "newpkg/x.py", "new\n");
  settle();
  auto taken = take_snapshot(m_venv, *m_lock, "taken");
  ASSERT_TRUE(taken) << taken.error().message;
  EXPECT_EQ(taken->info.linked, 2u);
  ASSERT_EQ(taken->added_links.size(), 2u);
  EXPECT_EQ(count_entries(store()), links_before + 2);
  const fs::path second_manifest = snapshots_dir(m_venv) / second.id / "manifest";
  const std::string kept = read_text(second_manifest);
  write_text(second_manifest, "venvfix-snapshot 3\nnot a manifest\n");
  auto general = drop_unreferenced_store_links(m_venv);
  ASSERT_FALSE(general) << "it reads every manifest";
  EXPECT_NE(general.error().message.find("kept every link"), std::string::npos);
  ASSERT_TRUE(delete_taken_snapshot(m_venv, *m_lock, *taken));
  EXPECT_FALSE(fs::exists(snapshots_dir(m_venv) / taken->info.id));
  EXPECT_EQ(count_entries(store()), links_before);
  for (const std::string& name : taken->added_links) EXPECT_FALSE(fs::exists(store() / name));
  write_text(second_manifest, kept);
  // The next snapshot reads the store again and links what it lacks.
  settle();
  SnapshotInfo after = snapshot("after");
  EXPECT_TRUE(after.store_read);
  EXPECT_EQ(after.linked, 2u);
  ASSERT_TRUE(restore_snapshot(m_venv, *m_lock, first.id, KeepSnapshot::no));
  EXPECT_EQ(fingerprint(m_venv), first_print);
}

// The guard's retention: only the snapshots whose reason has the prefix are counted and deleted,
// the links only they held go, and below the limit no manifest is read (an unreadable one does
// not matter then). Deciding what a manifest references reads only its F entries' numbers, and
// one that are not numbers keeps every link.
TEST_F(TxnSnapshotStore, PruningByReasonCountsAndDeletesOnlyThoseSnapshots) {
  SnapshotInfo users = snapshot("snapshot create");
  write_text(site() / "only_first.py", "held by the first guard snapshot only\n");
  SnapshotInfo first = snapshot("guard: pip install a");
  struct stat only_first {};
  ASSERT_EQ(::lstat((site() / "only_first.py").c_str(), &only_first), 0);
  const std::string only_first_link = store_key(entry_from_stat('F', only_first, "x"));
  fs::remove(site() / "only_first.py");
  replace("pkg/__init__.py", "x = 2\n");
  SnapshotInfo second = snapshot("guard: pip install b");
  SnapshotInfo third = snapshot("guard: pip install c");
  ASSERT_TRUE(fs::exists(store() / only_first_link));
  auto pruned = prune_snapshots_with_reason(m_venv, *m_lock, 2, "guard: ");
  ASSERT_TRUE(pruned) << pruned.error().message;
  EXPECT_EQ(*pruned, std::vector<std::string>{first.id});
  auto listed = list_snapshots(m_venv);
  ASSERT_TRUE(listed);
  std::vector<std::string> ids;
  for (const SnapshotInfo& info : *listed) ids.push_back(info.id);
  EXPECT_EQ(ids, (std::vector<std::string>{users.id, second.id, third.id}));
  EXPECT_FALSE(fs::exists(store() / only_first_link));
  const std::size_t links = count_entries(store());
  // The user's manifest with an F entry whose inode is not a number.
  const fs::path users_manifest = snapshots_dir(m_venv) / users.id / "manifest";
  std::string text = read_text(users_manifest);
  const std::size_t entry = text.find("\nF ");
  ASSERT_NE(entry, std::string::npos);
  std::size_t field = entry + 3;
  for (int i = 0; i < 3; ++i) field = text.find(' ', field) + 1;  // mode, size, dev: the inode
  text.insert(field, "x");
  write_text(users_manifest, text);
  auto below_limit = prune_snapshots_with_reason(m_venv, *m_lock, 2, "guard: ");
  ASSERT_TRUE(below_limit) << "nothing to delete, so nothing read: " << below_limit.error().message;
  EXPECT_TRUE(below_limit->empty());
  replace("pkg/__init__.py", "x = 3\n");
  // The first prune kept the newest snapshot, the last walk, so the store still held every file
  // of it: the record was made again, and this snapshot does not read the store.
  SnapshotInfo fourth = snapshot("guard: pip install d");
  EXPECT_FALSE(fourth.store_read);
  EXPECT_EQ(fourth.linked, 1u);
  auto refused = prune_snapshots_with_reason(m_venv, *m_lock, 1, "guard: ");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("kept every link"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("bad file entry"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(count_entries(store()), links + 1) << "the new snapshot's link, and none dropped";
}

}  // namespace
}  // namespace venvfix::txn
