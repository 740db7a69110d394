// The bounded worker pool: every job once whatever the order, the first error stops the rest,
// one worker is the calling thread in index order, and no job means no call.
#include "venvfix/base/parallel.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace venvfix {
namespace {

using namespace std::chrono_literals;

TEST(Parallel, EveryJobRunsOnceAndResultsDoNotDependOnTheOrder) {
  constexpr std::size_t k_jobs = 500;
  std::vector<std::atomic<int>> runs(k_jobs);
  std::vector<std::uint64_t> squares(k_jobs);
  std::mutex mutex;
  std::set<std::size_t> workers;
  std::set<std::thread::id> threads;
  Status status = run_parallel(k_jobs, 4, [&](std::size_t i, const JobContext& context) {
    // Uneven job lengths scramble the completion order.
    if (i % 7 == 0) std::this_thread::sleep_for(200us);
    runs[i].fetch_add(1);
    squares[i] = static_cast<std::uint64_t>(i) * i;
    std::lock_guard lock(mutex);
    workers.insert(context.worker());
    threads.insert(std::this_thread::get_id());
    return ok();
  });
  ASSERT_TRUE(status) << status.error().message;
  for (std::size_t i = 0; i < k_jobs; ++i) {
    EXPECT_EQ(runs[i].load(), 1) << "job " << i;
    EXPECT_EQ(squares[i], static_cast<std::uint64_t>(i) * i);
  }
  EXPECT_LE(workers.size(), 4u);
  EXPECT_LT(*workers.rbegin(), 4u);
  EXPECT_EQ(workers.size(), threads.size()) << "one worker index per thread";
  EXPECT_TRUE(threads.count(std::this_thread::get_id())) << "the caller works too";
}

TEST(Parallel, TheFirstErrorStopsTheRestAndIsReturned) {
  constexpr std::size_t k_jobs = 1000;
  std::atomic<std::size_t> started{0};
  Status status = run_parallel(k_jobs, 4, [&](std::size_t i, const JobContext&) -> Status {
    started.fetch_add(1);
    if (i == 10) return make_error(ExitCode::network, "job {} failed", i);
    std::this_thread::sleep_for(1ms);
    return ok();
  });
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().code, ExitCode::network);
  EXPECT_EQ(status.error().message, "job 10 failed");
  // Jobs are handed out in order: besides 0..10, only those the other 3 threads had taken.
  EXPECT_LE(started.load(), 11u + 2 * 3u);
}

TEST(Parallel, ALongJobSeesThatAnotherFailed) {
  std::atomic<bool> saw_stop{false};
  Status status = run_parallel(2, 2, [&](std::size_t i, const JobContext& context) -> Status {
    if (i == 1) return make_error(ExitCode::usage, "second job refused");
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!context.stopping() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    saw_stop = context.stopping();
    return ok();
  });
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().message, "second job refused");
  EXPECT_TRUE(saw_stop.load());
}

TEST(Parallel, OneWorkerIsTheCallerInIndexOrderAndStopsAtTheFirstError) {
  std::vector<std::size_t> order;
  const auto caller = std::this_thread::get_id();
  bool elsewhere = false;
  Status status = run_parallel(10, 1, [&](std::size_t i, const JobContext& context) -> Status {
    elsewhere = elsewhere || std::this_thread::get_id() != caller || context.worker() != 0;
    order.push_back(i);
    if (i == 3 || i == 5) return make_error(ExitCode::error, "job {}", i);
    return ok();
  });
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().message, "job 3");
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_FALSE(elsewhere);
  // Zero workers asked means one.
  order.clear();
  ASSERT_TRUE(run_parallel(3, 0, [&](std::size_t i, const JobContext&) {
    order.push_back(i);
    return ok();
  }));
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2}));
}

TEST(Parallel, NoJobsMeansNoCallAndNoThread) {
  bool called = false;
  Status status = run_parallel(0, 8, [&](std::size_t, const JobContext&) {
    called = true;
    return ok();
  });
  EXPECT_TRUE(status);
  EXPECT_FALSE(called);
  EXPECT_EQ(parallel_workers(0, 8), 0u);
  EXPECT_EQ(parallel_workers(2, 8), 2u);
  EXPECT_EQ(parallel_workers(5, 0), 1u);
  // Fewer jobs than workers: only as many threads as jobs.
  std::mutex mutex;
  std::set<std::size_t> workers;
  ASSERT_TRUE(run_parallel(2, 8, [&](std::size_t, const JobContext& context) {
    std::lock_guard lock(mutex);
    workers.insert(context.worker());
    return ok();
  }));
  EXPECT_LT(*workers.rbegin(), 2u);
}

}  // namespace
}  // namespace venvfix
