// Format 2 snapshots on XFS with reflinks (an image on a loop device, mounted by the test as
// root; skipped, saying why, where that cannot be done). The store holds hard links there too
// (docs/benchmarks.md: a clone costs 2-4 times a link); FICLONE serves the one restore that must
// copy data (a file whose mode was changed through its shared inode).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "support/world.hpp"
#include "txn/txn_test_support.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {
namespace {

using testing::fingerprint;
using testing::k_site;
using testing::make_small_venv;
using testing::read_text;
using testing::write_text;
using venvfix::testing::run_command;

inline constexpr long k_xfs_magic = 0x58465342;

class TxnSnapshotXfs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mounting an XFS image on a loop device needs root";
    if (run_command({"mkfs.xfs", "-V"}).exit_code != 0) GTEST_SKIP() << "mkfs.xfs is missing";
    auto dir = TempDir::create("venvfix-xfs-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
    fs::path image = m_dir->path() / "xfs.img";
    {
      Fd fd(::open(image.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
      ASSERT_EQ(::ftruncate(fd.get(), 320L << 20), 0);  // sparse; XFS wants 300 MiB at least
    }
    auto made = run_command({"mkfs.xfs", "-q", "-m", "reflink=1", image.string()});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    auto loop = run_command({"losetup", "-f", "--show", image.string()});
    if (loop.exit_code != 0) GTEST_SKIP() << "no loop device here: " << loop.err;
    m_loop = loop.out.substr(0, loop.out.find('\n'));
    m_mount = m_dir->path() / "mnt";
    fs::create_directories(m_mount);
    if (::mount(m_loop.c_str(), m_mount.c_str(), "xfs", 0, nullptr) != 0) {
      GTEST_SKIP() << "cannot mount XFS from " << m_loop << ": " << errno_message(errno);
    }
    m_mounted = true;
  }
  void TearDown() override {
    if (m_mounted && ::umount2(m_mount.c_str(), 0) != 0) ::umount2(m_mount.c_str(), MNT_DETACH);
    if (!m_loop.empty()) {
      auto detached = run_command({"losetup", "-d", m_loop});
      EXPECT_EQ(detached.exit_code, 0) << detached.err;
    }
  }
  std::optional<TempDir> m_dir;
  std::string m_loop;
  fs::path m_mount;
  bool m_mounted = false;
};

TEST_F(TxnSnapshotXfs, SnapshotAndRollbackByteForByte) {
  struct statfs info {};
  ASSERT_EQ(::statfs(m_mount.c_str(), &info), 0);
  ASSERT_EQ(static_cast<long>(info.f_type), k_xfs_magic);
  env::Venv venv = make_small_venv(m_mount);
  fs::path site = venv.root / k_site;
  write_text(site / "nvidia/lib/libbig.so.1", std::string(3 << 20, 'b'), 0755);
  auto lock = VenvLock::acquire(venv, LockWait::fail);
  ASSERT_TRUE(lock);
  auto before = fingerprint(venv);
  auto first = create_snapshot(venv, *lock, "xfs");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->linked, 8u);
  auto second = create_snapshot(venv, *lock, "xfs again");
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->linked, 0u);
  // pip uninstall + reinstall of part of it, and a chmod through the shared inode.
  fs::remove(site / "nvidia/lib/libbig.so.1");
  fs::remove_all(site / "pkg/sub");
  write_text(site / "pkg/__init__.py.tmp", "reinstalled\n");
  fs::rename(site / "pkg/__init__.py.tmp", site / "pkg/__init__.py");
  write_text(site / "added/x.py", "x\n");
  ASSERT_EQ(::chmod((site / "pkg/lib/libpkg.so.1").c_str(), 0600), 0);
  auto restored = restore_snapshot(venv, *lock, first->id, KeepSnapshot::no);
  ASSERT_TRUE(restored) << restored.error().message;
  auto after = fingerprint(venv);
  EXPECT_EQ(after, before) << describe_difference(before, after);
  EXPECT_EQ(read_text(site / "nvidia/lib/libbig.so.1"), std::string(3 << 20, 'b'));
  ASSERT_TRUE(prune_snapshots(venv, *lock, 0));
}

}  // namespace
}  // namespace venvfix::txn
