// What a disk's write error does, asked of the kernel itself on a disk that refuses writes
// (support/failing_disk.hpp), not of a sync function that returns EIO. SyncAhead's contract
// (venvfix/base/sync_ahead.hpp) rests on the first test: the kernel reports a writeback error
// once to each open file and never to a file opened afterwards, while the data is gone. So a
// background fdatasync that failed is the only report of it, and a writer that went on to use
// the files would install what the disk never kept.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "support/failing_disk.hpp"
#include "venvfix/base/sync_ahead.hpp"

namespace venvfix {
namespace {

class DiskWriteErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = m_disk.start(); !why.empty()) GTEST_SKIP() << why;
  }
  // Random bytes: nothing on a fresh disk already holds them.
  static std::string random_bytes(std::size_t size) {
    std::mt19937_64 random(42);
    std::string bytes(size, '\0');
    for (char& byte : bytes) byte = static_cast<char>(random());
    return bytes;
  }
  static std::string read_all(const fs::path& path, std::size_t size) {
    std::string bytes(size, '\0');
    const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    EXPECT_TRUE(fd.valid()) << path;
    EXPECT_EQ(::pread(fd.get(), bytes.data(), size, 0), static_cast<ssize_t>(size)) << path;
    return bytes;
  }
  testing::FailingDisk m_disk;
};

TEST_F(DiskWriteErrors, AreReportedOnceToAnOpenFileAndNeverToOneOpenedLater) {
  const fs::path path = m_disk.root() / "member.so";
  const std::string data = random_bytes(4u << 20);
  Fd writer(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  ASSERT_TRUE(writer.valid());
  m_disk.refuse_writes();
  // The write itself succeeds: it only fills the page cache.
  ASSERT_EQ(::write(writer.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
  ASSERT_EQ(::fdatasync(writer.get()), -1) << "the disk refused the writes, the sync must say so";
  EXPECT_TRUE(errno == EIO || errno == ENOSPC) << errno_message(errno);
  m_disk.accept_writes();
  // Told once: the same file's next sync, and a sync of the file opened afresh, say success...
  EXPECT_EQ(::fdatasync(writer.get()), 0) << errno_message(errno);
  {
    const Fd reopened(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    ASSERT_TRUE(reopened.valid());
    EXPECT_EQ(::fdatasync(reopened.get()), 0) << errno_message(errno);
  }
  // ...and the page cache still shows the bytes, but the disk never got them.
  EXPECT_EQ(read_all(path, data.size()), data);
  writer = Fd();  // closed: the filesystem can be unmounted
  m_disk.remount();
  EXPECT_NE(read_all(path, data.size()), data) << "the refused bytes reached the disk after all";
}

TEST_F(DiskWriteErrors, SyncAheadIsTheOnlyOneToldAndNamesTheFile) {
  const fs::path path = m_disk.root() / "libbig.so.1";
  const std::string data = random_bytes(1u << 20);
  Fd writer(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  ASSERT_TRUE(writer.valid());
  m_disk.refuse_writes();
  ASSERT_EQ(::write(writer.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
  {
    SyncAhead ahead;  // the kernel's fdatasync
    ahead.add(writer.get(), path.string());
    const Status drained = ahead.drain();
    ASSERT_FALSE(drained) << "the disk refused the writes, drain() must say so";
    EXPECT_NE(drained.error().message.find(path.string()), std::string::npos)
        << drained.error().message;
  }
  m_disk.accept_writes();
  // The background sync used the writer's own open file (a duplicate of its descriptor), so the
  // writer's sync is not told again: drain() was the only report.
  EXPECT_EQ(::fdatasync(writer.get()), 0) << errno_message(errno);
  // Where the disk keeps the bytes, the same sync succeeds and the bytes stay.
  const fs::path kept = m_disk.root() / "libkept.so.1";
  Fd second(::open(kept.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  ASSERT_TRUE(second.valid());
  ASSERT_EQ(::write(second.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
  {
    SyncAhead ahead;
    ahead.add(second.get(), kept.string());
    const Status drained = ahead.drain();
    EXPECT_TRUE(drained) << drained.error().message;
  }
  writer = Fd();
  second = Fd();
  m_disk.remount();
  EXPECT_EQ(read_all(kept, data.size()), data);
}

}  // namespace
}  // namespace venvfix
