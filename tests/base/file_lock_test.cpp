// try_flock and wait_flock (venvfix/base/file_lock.hpp), under the venv's lock and the cache's:
// conflicting modes refused at once, a wait that a signal does not end (EINTR) and that ends
// when the holder lets go, and an error that names the file.
#include "venvfix/base/file_lock.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <future>

#include <gtest/gtest.h>

#include "support/flock_waiters.hpp"

namespace venvfix {
namespace {

class FileLock : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-file-lock-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
    m_file = m_dir->path() / "lock";
  }
  // Each open is its own open file description: flock conflicts between them as between
  // processes.
  Fd open_lock() const {
    auto fd = open_file(m_file, O_RDWR | O_CREAT);
    EXPECT_TRUE(fd) << fd.error().message;
    return fd ? std::move(fd).value() : Fd();
  }
  bool try_lock(const Fd& fd, FlockMode mode) const {
    auto taken = try_flock(fd, mode, m_file);
    EXPECT_TRUE(taken) << taken.error().message;
    return taken && *taken;
  }

  std::optional<TempDir> m_dir;
  fs::path m_file;
};

TEST_F(FileLock, ConflictingModesAreRefusedAtOnceSharedOnesAreNot) {
  Fd first = open_lock();
  Fd second = open_lock();
  EXPECT_TRUE(try_lock(first, FlockMode::shared));
  EXPECT_TRUE(try_lock(second, FlockMode::shared));
  Fd third = open_lock();
  EXPECT_FALSE(try_lock(third, FlockMode::exclusive));
  first = Fd();
  second = Fd();
  EXPECT_TRUE(try_lock(third, FlockMode::exclusive));
  EXPECT_FALSE(try_lock(open_lock(), FlockMode::shared));
}

void ignore_signal(int /*unused*/) {}

// The waiter's flock(2) is interrupted by a signal whose handler does not restart it (EINTR): it
// waits on, and returns once the holder closes its file.
TEST_F(FileLock, AWaitOutlastsASignalAndEndsWhenTheHolderLetsGo) {
  struct sigaction interrupting {};
  interrupting.sa_handler = ignore_signal;  // no SA_RESTART: flock returns EINTR
  struct sigaction previous {};
  ASSERT_EQ(::sigaction(SIGUSR1, &interrupting, &previous), 0);
  Fd holder = open_lock();
  ASSERT_TRUE(try_lock(holder, FlockMode::exclusive));
  Fd waiter_fd = open_lock();
  std::promise<pthread_t> started;
  std::atomic<bool> done{false};
  auto waiter = std::async(std::launch::async, [&] {
    started.set_value(::pthread_self());
    Status waited = wait_flock(waiter_fd, FlockMode::shared, m_file);
    done = true;
    return waited;
  });
  const pthread_t thread = started.get_future().get();
  ASSERT_TRUE(testing::someone_waits_in_flock(m_file, std::chrono::seconds(30)));
  ASSERT_EQ(::pthread_kill(thread, SIGUSR1), 0);
  EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "the signal ended the wait";
  EXPECT_FALSE(done);
  EXPECT_TRUE(testing::someone_waits_in_flock(m_file, std::chrono::seconds(30)));
  holder = Fd();
  Status waited = waiter.get();
  EXPECT_TRUE(waited) << waited.error().message;
  EXPECT_FALSE(try_lock(open_lock(), FlockMode::exclusive)) << "the waiter holds it now";
  ::sigaction(SIGUSR1, &previous, nullptr);
}

TEST_F(FileLock, AFailureNamesTheFile) {
  const Fd closed;  // not a descriptor: flock fails with EBADF, as on a filesystem without flock
  auto taken = try_flock(closed, FlockMode::shared, m_file);
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().message, "cannot lock " + m_file.string() + ": Bad file descriptor");
  Status waited = wait_flock(closed, FlockMode::exclusive, m_file);
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error().message, taken.error().message);
}

}  // namespace
}  // namespace venvfix
