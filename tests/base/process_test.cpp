// run_process: real children (sh, the shell tools), time limits, bounded capture, the result
// pipe, the private mount namespace and a fork refused by a real pids cgroup.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/threads_refused.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/process.hpp"

namespace venvfix {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

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

// The inherited fd stays open across exec (it is close-on-exec here, as every fd venvfix opens).
TEST(Process, TheInheritedFdIsTheChildsAtTheSameNumber) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  Fd read_end(fds[0]);
  Fd write_end(fds[1]);
  ASSERT_EQ(::write(write_end.get(), "hello\n", 6), 6);
  write_end = Fd();
  ProcessOptions options;
  options.inherit_fd = read_end.get();
  const std::string fd = std::to_string(read_end.get());
  auto outcome = run_process({"sh", "-c", "read -r line <&" + fd + " && echo \"$line\""}, options);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->out, "hello\n") << outcome->err;
  auto without = run_process({"sh", "-c", "read -r line <&" + fd}, ProcessOptions{});
  ASSERT_TRUE(without) << without.error().message;
  EXPECT_NE(without->exit_code, 0) << "an fd not named is closed at exec";
}

TEST(Process, FindExecutableSearchesPathAsExecvpDoes) {
  auto dir = TempDir::create("venvfix-process-test-");
  ASSERT_TRUE(dir);
  const fs::path first = dir->path() / "first";
  const fs::path second = dir->path() / "second";
  fs::create_directories(first / "tool");  // a directory of that name is skipped
  fs::create_directories(second);
  std::ofstream(first / "plain") << "";  // not executable: skipped
  for (const fs::path& file : {second / "tool", second / "plain"}) {
    std::ofstream(file) << "#!/bin/sh\n";
    fs::permissions(file, fs::perms::owner_all);
  }
  const char* saved = std::getenv("PATH");
  const std::string old_path = saved != nullptr ? saved : "";
  ::setenv("PATH", (first.string() + ":" + second.string()).c_str(), 1);
  EXPECT_EQ(find_executable("tool"), second / "tool");
  EXPECT_EQ(find_executable("plain"), second / "plain");
  EXPECT_EQ(find_executable("absent"), std::nullopt);
  EXPECT_EQ(find_executable((second / "tool").string()), second / "tool") << "a path is itself";
  EXPECT_EQ(find_executable((first / "plain").string()), std::nullopt);
  ::setenv("PATH", old_path.c_str(), 1);
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

TEST(Process, WithoutATimeLimitItWaitsForTheChild) {
  ProcessOptions options;
  options.timeout_ms = std::nullopt;
  auto outcome = run_process({"sh", "-c", "sleep 0.3; exit 4"}, options);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->exit_code, 4);
  EXPECT_FALSE(outcome->timed_out);
}

// A child that closes its output and keeps running is still held to the time limit.
TEST(Process, TheTimeLimitHoldsAfterTheOutputCloses) {
  ProcessOptions options;
  options.timeout_ms = 300;
  auto outcome = run_process({"sh", "-c", "exec >/dev/null 2>&1; sleep 30"}, options);
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->timed_out);
  EXPECT_EQ(outcome->signal, 9);
}

// Stdio::inherit: the child writes to this process's stdout (redirected to a file here) and the
// time limit still applies (to the child alone: it shares this process's group).
TEST(Process, InheritedStdioIsThisProcesssOwn) {
  auto dir = TempDir::create("venvfix-process-test-");
  ASSERT_TRUE(dir);
  const fs::path file = dir->path() / "stdout";
  Fd capture(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  ASSERT_TRUE(capture.valid());
  std::fflush(stdout);
  Fd saved(::dup(STDOUT_FILENO));
  ASSERT_TRUE(saved.valid());
  ::dup2(capture.get(), STDOUT_FILENO);
  ProcessOptions options;
  options.stdio = Stdio::inherit;
  auto outcome = run_process({"sh", "-c",
                              "echo inherited; test \"$(ps -o pgid= $$)\" -eq " +
                                  std::to_string(::getpgrp()) + " || exit 9"},
                             options);
  options.timeout_ms = 300;
  auto limited = run_process({"sleep", "30"}, options);
  ::dup2(saved.get(), STDOUT_FILENO);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->exit_code, 0) << "the child is not in this process's group";
  EXPECT_EQ(outcome->out, "");
  auto written = read_file(file);
  ASSERT_TRUE(written);
  EXPECT_EQ(*written, "inherited\n");
  ASSERT_TRUE(limited);
  EXPECT_TRUE(limited->timed_out);
  EXPECT_EQ(limited->signal, 9);
}

// ForwardSignals::yes: a SIGTERM or SIGINT sent to this process reaches the child, and this
// process lives on (without forwarding, SIGTERM would end the test binary).
TEST(Process, SignalsAreForwardedToTheChild) {
  ProcessOptions options;
  options.stdio = Stdio::inherit;
  options.forward_signals = ForwardSignals::yes;
  options.timeout_ms = 20'000;
  for (const auto& [signal, code] : {std::pair{"TERM", 42}, std::pair{"INT", 43}}) {
    std::string script =
        fmt::format("trap 'exit {}' {}; kill -{} $PPID; sleep 10 & wait", code, signal, signal);
    auto outcome = run_process({"sh", "-c", script}, options);
    ASSERT_TRUE(outcome) << outcome.error().message;
    EXPECT_EQ(outcome->exit_code, code) << signal;
    EXPECT_FALSE(outcome->timed_out) << signal;
  }
  struct sigaction now {};
  ::sigaction(SIGTERM, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL) << "the disposition was not restored";
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

// A fork refused for want of a process slot (a container at its pids.max) is tried again and
// succeeds once a slot is free: here another thread raises the group's limit after 300 ms.
TEST(Process, AForkRefusedForWantOfAProcessSlotIsTriedAgain) {
  std::promise<const testing::PidsGroup*> made;
  std::thread raiser([group = made.get_future()]() mutable {
    const testing::PidsGroup* limited = group.get();
    if (limited == nullptr) return;
    std::this_thread::sleep_for(300ms);
    EXPECT_TRUE(limited->set_max(2));
  });
  testing::ThreadsRefused refused;
  const std::string why = refused.start();
  made.set_value(why.empty() ? &refused.group() : nullptr);
  if (!why.empty()) {
    raiser.join();
    GTEST_SKIP() << why;
  }
  const auto start = std::chrono::steady_clock::now();
  auto outcome = run_process({"true"}, {});
  const auto waited = std::chrono::steady_clock::now() - start;
  raiser.join();
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->exit_code, 0);
  EXPECT_GE(waited, 300ms);
}

// A fork refused for longer than venvfix waits (2.55 s) is an error naming the command.
TEST(Process, AForkRefusedForGoodIsAnErrorNamingTheCommand) {
  testing::ThreadsRefused refused;
  if (const std::string why = refused.start(); !why.empty()) GTEST_SKIP() << why;
  const auto start = std::chrono::steady_clock::now();
  auto outcome = run_process({"true"}, {});
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().message, "cannot run true: fork: Resource temporarily unavailable");
  EXPECT_GE(waited, 2500ms);
}

}  // namespace
}  // namespace venvfix
