// The download cache's lock (venvfix/fetch/cache_lock.hpp) as flock(2) and other processes see
// it: shared holders side by side, the exclusive one alone, a refusal that names the cache and
// the way to wait, a wait that ends when the holder lets go, and no lock inherited by a command
// the holder runs.
#include "venvfix/fetch/cache_lock.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "support/scratch_test.hpp"
#include "support/world.hpp"

namespace venvfix::fetch {
namespace {

using ::testing::HasSubstr;

class FetchCacheLock : public venvfix::testing::ScratchTest {
 protected:
  FetchCacheLock() : ScratchTest("venvfix-cache-lock-") {}
  void SetUp() override {
    ScratchTest::SetUp();
    if (HasFatalFailure()) return;
    fs::create_directories(path("cache"));
  }
  Result<CacheLock> take(CacheLock::Mode mode, CacheLock::Wait wait = CacheLock::Wait::fail,
                         const std::function<void()>& on_wait = {}) {
    return CacheLock::acquire(path("cache"), mode, wait, on_wait);
  }
  // What `flock -n` in another process gets: 0 when it could take the lock that way.
  int other_process_takes(const std::string& how) {
    return venvfix::testing::run_command({"flock", "-n", how, path("cache/lock").string(), "true"})
        .exit_code;
  }
};

TEST_F(FetchCacheLock, SharedHoldersGoTogetherAndKeepTheExclusiveOneOut) {
  auto first = take(CacheLock::Mode::shared);
  auto second = take(CacheLock::Mode::shared);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(other_process_takes("-s"), 0);
  EXPECT_NE(other_process_takes("-x"), 0);
  auto refused = take(CacheLock::Mode::exclusive);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::locked);
  EXPECT_THAT(refused.error().message, HasSubstr(path("cache").string() + " is in use"));
  EXPECT_THAT(refused.error().message, HasSubstr("--wait"));
  first->release();
  EXPECT_FALSE(take(CacheLock::Mode::exclusive)) << "the second holder still holds it";
  second->release();
  auto alone = take(CacheLock::Mode::exclusive);
  ASSERT_TRUE(alone) << alone.error().message;
  EXPECT_NE(other_process_takes("-s"), 0);
}

TEST_F(FetchCacheLock, AWaiterIsToldOnceAndGetsTheLockWhenTheHolderLetsGo) {
  auto held = take(CacheLock::Mode::exclusive);
  ASSERT_TRUE(held);
  std::atomic<int> told{0};
  auto waiting = std::async(std::launch::async, [&] {
    return take(CacheLock::Mode::shared, CacheLock::Wait::wait, [&] { ++told; });
  });
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  held->release();
  auto got = waiting.get();
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(told.load(), 1);
  EXPECT_NE(other_process_takes("-x"), 0);
}

// A command the holder runs (an apply's --verify-cmd, the venv's interpreter) must not hold the
// cache after the holder lets go: the descriptor is close-on-exec.
TEST_F(FetchCacheLock, ACommandTheHolderRunsDoesNotKeepTheLock) {
  auto held = take(CacheLock::Mode::shared);
  ASSERT_TRUE(held);
  const std::string marker = path("child-started").string();
  auto child = std::async(std::launch::async, [&] {
    return venvfix::testing::run_command({"sh", "-c", "touch " + marker + "; sleep 3"});
  });
  for (int i = 0; i < 500 && !fs::exists(marker); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(fs::exists(marker));
  held->release();
  EXPECT_EQ(other_process_takes("-x"), 0) << "the child still holds the cache's lock";
  child.get();
}

TEST_F(FetchCacheLock, ACacheThatCannotBeLockedIsAnErrorNamingTheLockFile) {
  auto missing =
      CacheLock::acquire(path("no-such-cache"), CacheLock::Mode::shared, CacheLock::Wait::fail);
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message, HasSubstr(path("no-such-cache/lock").string()));
  EXPECT_FALSE(fs::exists(path("no-such-cache"))) << "the cache directory is not made";
}

// A user who may only read the cache (another user's: the lock file is not theirs to write)
// still takes the shared lock, through a read-only descriptor: their apply keeps the owner's
// prune out. Run as `nobody` in a child process.
TEST_F(FetchCacheLock, AUserWhoMayOnlyReadTheCacheStillTakesItsSharedLock) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to become another user";
  ASSERT_TRUE(take(CacheLock::Mode::shared));  // makes the lock file, root's
  fs::permissions(path(""), fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  fs::permissions(path("cache"), fs::perms::owner_all | fs::perms::group_exec |
                                     fs::perms::others_exec | fs::perms::others_read);
  fs::permissions(path("cache/lock"),
                  fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const uid_t nobody = 65534;
    if (::setgid(nobody) != 0 || ::setuid(nobody) != 0) ::_exit(3);
    auto lock = CacheLock::acquire(path("cache"), CacheLock::Mode::shared, CacheLock::Wait::fail);
    ::_exit(lock ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "nobody could not take the shared lock";
}

}  // namespace
}  // namespace venvfix::fetch
