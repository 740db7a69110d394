// SyncAhead (venvfix/base/sync_ahead.hpp): every file added is synced on the background thread
// (the kernel's own fdatasync, and a recording one that shows what was asked), a file still
// waiting for its sync is not queued twice, drain() waits for the syncs in flight, and a failed
// sync comes back from drain() naming the file.
#include "venvfix/base/sync_ahead.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace venvfix {
namespace {

class SyncAheadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-sync-ahead-test-");
    ASSERT_TRUE(dir) << dir.error().message;
    m_dir.emplace(std::move(dir).value());
  }
  Fd write_file(const std::string& name, std::string_view data) const {
    Fd fd(::open((m_dir->path() / name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    EXPECT_TRUE(fd.valid());
    EXPECT_EQ(::write(fd.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
    return fd;
  }
  static ino_t inode_of(int fd) {
    struct stat st {};
    EXPECT_EQ(::fstat(fd, &st), 0);
    return st.st_ino;
  }
  std::optional<TempDir> m_dir;
};

TEST_F(SyncAheadTest, SyncsEveryFileAddedWithTheKernelsFdatasync) {
  std::mutex mutex;
  std::set<ino_t> synced;
  const SyncAhead::SyncFunction fdatasync = SyncAhead::default_sync();
  SyncAhead ahead([&](int fd) {
    const int error = fdatasync(fd);
    std::lock_guard lock(mutex);
    if (error == 0) synced.insert(inode_of(fd));
    return error;
  });
  std::set<ino_t> written;
  for (int i = 0; i < 5; ++i) {
    Fd file = write_file("f" + std::to_string(i), std::string(100000, 'x'));
    written.insert(inode_of(file.get()));
    ahead.add(file.get(), "f" + std::to_string(i));
  }  // the writer closes its own: the queued duplicate stays valid
  ASSERT_TRUE(ahead.drain());
  std::lock_guard lock(mutex);
  EXPECT_EQ(synced, written);
}

TEST_F(SyncAheadTest, QueuesAFileWaitingForItsSyncOnce) {
  // The first sync (of a) blocks until released; the other adds come while it does, so they
  // find their files waiting in the queue.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> in_first = false;
  std::mutex mutex;
  std::vector<ino_t> synced;
  SyncAhead ahead([&](int fd) {
    if (!in_first.exchange(true)) released.wait();
    std::lock_guard lock(mutex);
    synced.push_back(inode_of(fd));
    return 0;
  });
  Fd a = write_file("a", "1");
  Fd b = write_file("b", "2");
  ahead.add(a.get(), "a");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!in_first && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_TRUE(in_first) << "a's sync never started";
  for (int i = 0; i < 3; ++i) {
    ahead.add(b.get(), "b");
    ahead.add(a.get(), "a");  // a is being synced, not waiting: queued again, once
  }
  release.set_value();
  ASSERT_TRUE(ahead.drain());
  std::lock_guard lock(mutex);
  EXPECT_EQ(synced, (std::vector<ino_t>{inode_of(a.get()), inode_of(b.get()), inode_of(a.get())}));
}

TEST_F(SyncAheadTest, DrainWaitsForTheSyncInFlight) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> done = false;
  SyncAhead ahead([&](int) {
    released.wait();
    done = true;
    return 0;
  });
  Fd a = write_file("a", "1");
  ahead.add(a.get(), "a");
  auto drained = std::async(std::launch::async, [&] { return ahead.drain(); });
  EXPECT_EQ(drained.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  release.set_value();
  EXPECT_TRUE(drained.get());
  EXPECT_TRUE(done);
}

TEST_F(SyncAheadTest, AFailedSyncComesBackFromDrainNamingTheFile) {
  // fdatasync of a pipe fails (EINVAL): the kernel's own refusal, not a stand-in.
  int ends[2];
  ASSERT_EQ(::pipe2(ends, O_CLOEXEC), 0);
  Fd read_end(ends[0]);
  Fd write_end(ends[1]);
  SyncAhead ahead;
  ahead.add(write_end.get(), "the-pipe");
  const Status drained = ahead.drain();
  ASSERT_FALSE(drained);
  EXPECT_EQ(drained.error().message, "the-pipe: fdatasync: " + errno_message(EINVAL));
  // Once failed, it stays failed: the writer gives up on these files.
  Fd a = write_file("a", "1");
  ahead.add(a.get(), "a");
  EXPECT_FALSE(ahead.drain());
}

TEST_F(SyncAheadTest, StopsWithoutSyncingWhatIsStillQueued) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> calls = 0;
  Fd a = write_file("a", "1");
  Fd b = write_file("b", "2");
  std::thread releaser;
  {
    SyncAhead ahead([&](int) {
      ++calls;
      released.wait();
      return 0;
    });
    ahead.add(a.get(), "a");
    // Until the thread is in a's sync (bounded: a broken add() must fail, not hang).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (calls == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    ASSERT_EQ(calls, 1) << "a's sync never started";
    ahead.add(b.get(), "b");
    releaser = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      release.set_value();
    });
  }  // the destructor waits for a's sync, and b's never starts
  releaser.join();
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace venvfix
