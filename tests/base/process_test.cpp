// run_process: real children (sh, the shell tools), time limits, bounded capture, the result
// pipe and the private mount namespace.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/process.hpp"

namespace venvfix {
namespace {

using ::testing::HasSubstr;

TEST(Process, CapturesStreamsSeparatelyAndTheStatus) {
  ProcessOptions options;
  options.result_pipe = true;
  auto outcome =
      run_process({"sh", "-c", "echo out; echo err >&2; echo result >&3; exit 3"}, options);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->exit_code, 3);
  EXPECT_EQ(outcome->out, "out\n");
  EXPECT_EQ(outcome->err, "err\n");
  EXPECT_EQ(outcome->result, "result\n");
  EXPECT_FALSE(outcome->timed_out);
}

TEST(Process, TheEnvironmentIsExactlyTheOneGiven) {
  ProcessOptions options;
  options.environment = std::vector<std::string>{"VENVFIX_TEST_VALUE=42", "PATH=/usr/bin:/bin"};
  auto outcome = run_process({"sh", "-c", "env | sort"}, options);
  ASSERT_TRUE(outcome);
  EXPECT_THAT(outcome->out, HasSubstr("VENVFIX_TEST_VALUE=42\n"));
  EXPECT_THAT(outcome->out, ::testing::Not(HasSubstr("HOME=")));
}

TEST(Process, TheTimeLimitKillsTheWholeGroup) {
  ProcessOptions options;
  options.timeout_ms = 300;
  auto outcome = run_process({"sh", "-c", "sleep 30 & sleep 30"}, options);
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->timed_out);
  EXPECT_EQ(outcome->signal, 9);
  EXPECT_EQ(outcome->exit_code, 128 + 9);
}

TEST(Process, OutputKeepsTheLastBytes) {
  ProcessOptions options;
  options.max_output = 1000;
  auto outcome = run_process({"sh", "-c", "seq 1 100000"}, options);
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->out.size(), 1000u);
  EXPECT_TRUE(outcome->out.ends_with("99999\n100000\n"));
}

TEST(Process, ASignalIsReported) {
  auto outcome = run_process({"sh", "-c", "kill -SEGV $$"}, {});
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->signal, 11);
  EXPECT_EQ(outcome->exit_code, 128 + 11);
}

TEST(Process, AFailedExecIsStatus127WithTheReason) {
  auto outcome = run_process({"/nonexistent/venvfix-no-such-command"}, {});
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->exit_code, 127);
  EXPECT_THAT(outcome->err, HasSubstr("cannot run /nonexistent/venvfix-no-such-command: exec:"));
}

TEST(Process, BindMountsAreSeenOnlyByTheChild) {
  if (::geteuid() != 0) GTEST_SKIP() << "a mount namespace needs root";
  auto dir = TempDir::create("venvfix-process-test-");
  ASSERT_TRUE(dir);
  ASSERT_TRUE(write_file_atomic(dir->path() / "over", "the child's view\n"));
  ASSERT_TRUE(write_file_atomic(dir->path() / "under", "the host's view\n"));
  ProcessOptions options;
  options.bind_mounts.push_back({dir->path() / "over", dir->path() / "under"});
  auto outcome = run_process({"cat", (dir->path() / "under").string()}, options);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->out, "the child's view\n");
  auto here = read_file(dir->path() / "under");
  ASSERT_TRUE(here);
  EXPECT_EQ(*here, "the host's view\n");

  // A target that does not exist: the namespace step fails, named, and nothing runs.
  options.bind_mounts = {{dir->path() / "over", dir->path() / "absent"}};
  auto failed = run_process({"true"}, options);
  ASSERT_FALSE(failed);
  EXPECT_THAT(failed.error().message, HasSubstr("cannot run true: mount --bind:"));
}

}  // namespace
}  // namespace venvfix
