// `venvfix snapshot create` + pip + `venvfix rollback` on test-world venvs: byte-for-byte.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "cli/txn_cli_support.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/txn/lock.hpp"

namespace venvfix::txn {
namespace {

using testing::print_of;
using testing::venvfix_cli;

class RollbackCli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-rollback-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
  }
  fs::path scenario(std::string_view name) {
    return venvfix::testing::make_scenario(name, m_dir->path());
  }
  std::optional<TempDir> m_dir;
};

TEST_F(RollbackCli, PipUninstallIsUndoneByteForByte) {
  fs::path venv = scenario("healthy");
  auto before = print_of(venv);
  auto created = venvfix_cli(venv, {"snapshot", "create", "--reason", "before pip"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  auto pip = venvfix::testing::run_command(
      {(venv / "bin/python").string(), "-m", "pip", "uninstall", "-y", "nvidia-cudnn-cu12"});
  ASSERT_EQ(pip.exit_code, 0) << pip.err;
  EXPECT_NE(print_of(venv), before);
  auto diff = venvfix_cli(venv, {"snapshot", "diff"});
  EXPECT_EQ(diff.exit_code, 3);
  EXPECT_NE(diff.out.find("- lib/"), std::string::npos) << diff.out;
  auto rolled = venvfix_cli(venv, {"rollback"});
  ASSERT_EQ(rolled.exit_code, 0) << rolled.err;
  EXPECT_NE(rolled.out.find("undoes this rollback"), std::string::npos) << rolled.out;
  auto after = print_of(venv);
  EXPECT_EQ(after, before) << describe_difference(before, after);
  auto doctor = venvfix_cli(venv, {"doctor"});
  EXPECT_EQ(doctor.exit_code, 0) << doctor.out << doctor.err;
}

TEST_F(RollbackCli, InPlaceModificationIsRefusedNamingTheFile) {
  fs::path venv = scenario("healthy");
  auto created = venvfix_cli(venv, {"--json", "snapshot", "create"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  if (created.out.find("\"hardlink\"") == std::string::npos) GTEST_SKIP() << "reflink snapshot";
  auto pip = venvfix::testing::run_command(
      {(venv / "bin/python").string(), "-m", "pip", "uninstall", "-y", "nvidia-cudnn-cu12"});
  ASSERT_EQ(pip.exit_code, 0) << pip.err;
  // A file pip did not touch, written in place: the snapshot's hard link sees the change.
  auto env = env::open_venv_at(venv);
  ASSERT_TRUE(env);
  fs::path edited = env->purelib / "torch/__init__.py";
  ASSERT_TRUE(fs::exists(edited));
  std::ofstream(edited, std::ios::app) << "# edited in place\n";
  auto print = print_of(venv);
  auto rolled = venvfix_cli(venv, {"rollback"});
  EXPECT_EQ(rolled.exit_code, 1);
  EXPECT_NE(rolled.err.find("torch/__init__.py was changed in place"), std::string::npos)
      << rolled.err;
  EXPECT_EQ(print_of(venv), print);
}

TEST_F(RollbackCli, SecondVenvfixFailsFastOrWaits) {
  fs::path venv = scenario("healthy");
  auto env = env::open_venv_at(venv);
  ASSERT_TRUE(env);
  auto lock = VenvLock::acquire(*env, LockWait::fail);
  ASSERT_TRUE(lock);
  auto refused = venvfix_cli(venv, {"snapshot", "create"});
  EXPECT_EQ(refused.exit_code, 6);
  EXPECT_NE(refused.err.find("is locked by venvfix (pid " + std::to_string(::getpid())),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find(venv.string()), std::string::npos);

  auto start = std::chrono::steady_clock::now();
  venvfix::testing::CommandResult waited;
  std::thread waiter([&] { waited = venvfix_cli(venv, {"snapshot", "create", "--wait"}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  lock = make_error(ExitCode::error, "released");  // drops the lock
  waiter.join();
  EXPECT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
}

TEST_F(RollbackCli, UnfinishedTransactionBlocksEveryCommand) {
  fs::path venv = scenario("healthy");
  fs::create_directories(venv / ".venvfix/journal");
  std::ofstream(venv / ".venvfix/journal/journal.json")
      << R"({"schema": "venvfix-journal/1", "id": "t1", "reason": "apply test", "created": "x",
             "pid": 1, "staging": ".venvfix/staging/t1", "staging_owned": true, "consumes": "",
             "steps": []})";
  for (std::vector<std::string> args : {std::vector<std::string>{"doctor"},
                                        {"why", "libcudnn.so.9"},
                                        {"snapshot", "list"},
                                        {"rollback"},
                                        {"run", "--", "true"}}) {
    auto result = venvfix_cli(venv, args);
    EXPECT_EQ(result.exit_code, 6) << args.front() << ": " << result.err;
    EXPECT_NE(result.err.find("venvfix recover"), std::string::npos) << result.err;
  }
  auto recovered = venvfix_cli(venv, {"recover"});
  EXPECT_EQ(recovered.exit_code, 0) << recovered.err;
  EXPECT_EQ(venvfix_cli(venv, {"doctor"}).exit_code, 0);
}

}  // namespace
}  // namespace venvfix::txn
