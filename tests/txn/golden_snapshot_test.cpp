// The golden examples in snapshots/examples/ (one per manifest format version and kind) are
// restored by this venvfix: a newer venvfix always restores an older snapshot.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <charconv>

#include "support/paths.hpp"
#include "txn/txn_test_support.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {
namespace {

using testing::fingerprint;
using testing::k_site;
using testing::read_text;

class TxnGoldenSnapshot : public ::testing::Test {
 protected:
  // Copies example `name` (its venv/ and snapshot/) into a temporary venv; returns the venv
  // and the snapshot id from the manifest.
  std::pair<env::Venv, std::string> install(const std::string& name) {
    auto dir = TempDir::create("venvfix-golden-test-");
    EXPECT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
    fs::path example = venvfix::testing::source_dir() / "snapshots/examples" / name;
    fs::path root = m_dir->path() / "venv";
    fs::copy(example / "venv", root, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    std::string manifest = read_text(example / "snapshot/manifest");
    std::size_t at = manifest.find("\nid ") + 4;
    std::string id = manifest.substr(at, manifest.find('\n', at) - at);
    fs::create_directories(root / ".venvfix/snapshots");
    fs::copy(example / "snapshot", root / ".venvfix/snapshots" / id,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    if (fs::exists(example / "store")) copy_store(example / "store", root / ".venvfix/store");
    auto venv = env::open_venv_at(root);
    EXPECT_TRUE(venv) << venv.error().message;
    return {*venv, id};
  }
  // A format 2 or 3 store, copied as `cp -a` would: git keeps neither mtimes nor exact modes, so
  // each file gets back the mtime and mode its name records (dev-ino-size-mtime-mode, hex and
  // octal).
  static void copy_store(const fs::path& from, const fs::path& to) {
    fs::copy(from, to, fs::copy_options::recursive);
    std::error_code error;
    for (fs::directory_iterator it(to, error), end; !error && it != end; it.increment(error)) {
      std::string name = it->path().filename().string();
      std::size_t mode_at = name.rfind('-');
      std::size_t mtime_at = name.rfind('-', mode_at - 1);
      std::uint64_t mtime = 0;
      unsigned mode = 0;
      std::from_chars(name.data() + mtime_at + 1, name.data() + mode_at, mtime, 16);
      std::from_chars(name.data() + mode_at + 1, name.data() + name.size(), mode, 8);
      struct timespec times[2] = {
          {0, UTIME_OMIT},
          {static_cast<time_t>(mtime / 1000000000), static_cast<long>(mtime % 1000000000)}};
      EXPECT_EQ(::utimensat(AT_FDCWD, it->path().c_str(), times, 0), 0) << name;
      EXPECT_EQ(::chmod(it->path().c_str(), mode), 0) << name;
    }
    EXPECT_FALSE(error) << error.message();
  }
  // Restores tree snapshot `id` of example `name` and expects the venv to equal the example's
  // directory `state`; the snapshot is kept.
  void expect_restores_to(const env::Venv& venv, const std::string& id, const std::string& name,
                          const std::string& state) {
    fs::path example = venvfix::testing::source_dir() / "snapshots/examples" / name;
    auto expected = fingerprint_tree(example / state);
    ASSERT_TRUE(expected);
    auto lock = VenvLock::acquire(venv, LockWait::fail);
    ASSERT_TRUE(lock);
    auto restored = restore_snapshot(venv, *lock, id, KeepSnapshot::no);
    ASSERT_TRUE(restored) << restored.error().message;
    auto now = fingerprint(venv);
    EXPECT_EQ(now, *expected) << describe_difference(*expected, now);
    EXPECT_TRUE(fs::exists(snapshots_dir(venv) / id / "manifest")) << "a tree snapshot is kept";
  }
  std::optional<TempDir> m_dir;
};

TEST_F(TxnGoldenSnapshot, Version1TransactionSnapshot) {
  auto [venv, id] = install("v1-transaction");
  auto lock = VenvLock::acquire(venv, LockWait::fail);
  ASSERT_TRUE(lock);
  auto found = find_snapshot(venv, std::nullopt);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->id, id);
  EXPECT_EQ(found->files, 3u);
  auto restored = restore_snapshot(venv, *lock, id, KeepSnapshot::no);
  ASSERT_TRUE(restored) << restored.error().message;
  fs::path site = venv.root / k_site;
  EXPECT_EQ(read_text(site / "torch/__init__.py"), "import torch_before\n");
  EXPECT_EQ(read_text(site / "nvidia/cudnn/lib/libcudnn.so.9"),
            "\x7f"
            "ELF fake cudnn\n");
  EXPECT_EQ(fs::read_symlink(site / "nvidia/cudnn/lib/libcudnn.so"), "libcudnn.so.9");
  EXPECT_EQ(read_text(site / "nvidia/cudnn/keep.txt"), "kept\n");
  EXPECT_FALSE(fs::exists(site / "added_by_txn"));
  EXPECT_FALSE(fs::exists(snapshots_dir(venv) / id));
}

TEST_F(TxnGoldenSnapshot, Version1TreeSnapshotByReflink) {
  auto [venv, id] = install("v1-tree-reflink");
  expect_restores_to(venv, id, "v1-tree-reflink", "snapshot/files");
}

// Format 2: the manifest records identities, the files are in the venv's link store. The copied
// venv's files have other inodes than the manifest names, so every file is put back from the
// store; what pip added goes, the directory it removed comes back, with its symlink.
TEST_F(TxnGoldenSnapshot, Version2TreeSnapshotFromTheStore) {
  auto [venv, id] = install("v2-tree-store");
  auto found = find_snapshot(venv, std::nullopt);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->format, 2);
  EXPECT_EQ(found->files, 6u);
  auto diff = diff_snapshot(venv, id);
  ASSERT_TRUE(diff) << diff.error().message;
  EXPECT_EQ(diff->added.size(), 2u);  // pip_added/, pip_added/x.py
  expect_restores_to(venv, id, "v2-tree-store", "expected");
}

// Format 3: format 2 with the walk's clock, the counts in the header and directory identities;
// `d` directories had their entries carried over from an earlier walk. Restored like format 2
// (every stored file is intact).
TEST_F(TxnGoldenSnapshot, Version3TreeSnapshotWithCarriedDirectories) {
  auto [venv, id] = install("v3-tree-carried");
  auto found = find_snapshot(venv, std::nullopt);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->format, 3);
  EXPECT_EQ(found->files, 6u);
  EXPECT_EQ(found->bytes, 90u);
  expect_restores_to(venv, id, "v3-tree-carried", "expected");
}

}  // namespace
}  // namespace venvfix::txn
