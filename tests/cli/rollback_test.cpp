// `venvfix snapshot create` + pip + `venvfix rollback` on test-world venvs: byte-for-byte.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/txn_cli_support.hpp"
#include "support/scratch_test.hpp"
#include "txn/txn_test_support.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/txn/lock.hpp"

namespace venvfix::txn {
namespace {

using testing::Entries;
using testing::inodes_of;
using testing::print_of;
using testing::venvfix_cli;

class RollbackCli : public venvfix::testing::ScratchTest {
 protected:
  RollbackCli() : ScratchTest("venvfix-rollback-test-") {}
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

// The paths whose inode differs between two maps, or that only one has.
std::set<std::string> differing(const std::map<std::string, ino_t>& a,
                                const std::map<std::string, ino_t>& b) {
  std::set<std::string> out;
  for (const auto& [path, ino] : a) {
    auto it = b.find(path);
    if (it == b.end() || it->second != ino) out.insert(path);
  }
  for (const auto& [path, ino] : b) {
    if (!a.contains(path)) out.insert(path);
  }
  return out;
}

// A real `pip install --force-reinstall` of one distribution rewrites every file it owns; the
// rollback moves exactly those back (the very inodes the snapshot recorded) and nothing else.
TEST_F(RollbackCli, ForceReinstallOfOneDistributionRollsBackOnlyItsFiles) {
  fs::path venv = scenario("healthy");
  auto env = env::open_venv_at(venv);
  ASSERT_TRUE(env);
  fs::path dist_info = env->purelib / "nvidia_cudnn_cu12-9.10.2.21.dist-info";
  ASSERT_TRUE(fs::exists(dist_info / "RECORD"));
  auto record = read_file(dist_info / "RECORD");
  ASSERT_TRUE(record);
  std::set<std::string> owned;  // venv-relative paths of the distribution
  for (std::size_t at = 0; at < record->size();) {
    std::size_t end = record->find('\n', at);
    std::string line = record->substr(at, end - at);
    at = end == std::string::npos ? record->size() : end + 1;
    if (line.empty()) continue;
    fs::path path = (env->purelib / line.substr(0, line.find(','))).lexically_normal();
    owned.insert(path.lexically_relative(venv).string());
  }
  std::string dist_info_rel = dist_info.lexically_relative(venv).string();
  auto before = print_of(venv);
  auto inodes_before = inodes_of(venv, Entries::all_but_directories);
  ASSERT_EQ(venvfix_cli(venv, {"snapshot", "create"}).exit_code, 0);
  auto pip = venvfix::testing::run_command(
      {(venv / "bin/python").string(), "-m", "pip", "install", "--force-reinstall", "--no-deps",
       "--no-index", "--find-links", venvfix::testing::test_world().wheels_dir.string(),
       "nvidia-cudnn-cu12==9.10.2.21"});
  ASSERT_EQ(pip.exit_code, 0) << pip.err;
  auto inodes_pip = inodes_of(venv, Entries::all_but_directories);
  std::set<std::string> by_pip = differing(inodes_before, inodes_pip);
  ASSERT_FALSE(by_pip.empty());
  auto rolled = venvfix_cli(venv, {"--json", "rollback"});
  ASSERT_EQ(rolled.exit_code, 0) << rolled.err;
  auto after = print_of(venv);
  EXPECT_EQ(after, before) << describe_difference(before, after);
  auto inodes_after = inodes_of(venv, Entries::all_but_directories);
  EXPECT_EQ(inodes_after, inodes_before) << "the rollback did not put back the recorded inodes";
  std::set<std::string> by_rollback = differing(inodes_pip, inodes_after);
  EXPECT_EQ(by_rollback, by_pip);
  for (const std::string& path : by_rollback) {
    EXPECT_TRUE(owned.contains(path) || path.starts_with(dist_info_rel + "/"))
        << path << " is not nvidia-cudnn-cu12's, yet the rollback moved it";
  }
  // What the rollback moved out of the venv, as its undo snapshot records it.
  std::string undo = nlohmann::json::parse(rolled.out).at("undo_snapshot").get<std::string>();
  auto shown = venvfix_cli(venv, {"--json", "snapshot", "show", undo});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  std::uint64_t moved_out = nlohmann::json::parse(shown.out).at("files").get<std::uint64_t>();
  std::size_t present_after_pip = 0;
  for (const std::string& path : by_rollback) present_after_pip += inodes_pip.contains(path);
  EXPECT_EQ(moved_out, present_after_pip);
  std::printf(
      "force-reinstall rollback: %zu of %zu venv files touched (the distribution owns %zu "
      "RECORD paths); %llu moved out\n",
      by_rollback.size(), inodes_before.size(), owned.size(),
      static_cast<unsigned long long>(moved_out));
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

// A Linux file name is bytes: a program under the venv writes one that is not UTF-8 (Latin-1).
// The rollback removes it (its journal names it in hex), `--json` documents still parse (the
// byte shown as U+FFFD), and undoing the rollback puts the very name back.
TEST_F(RollbackCli, AFileNameThatIsNotUtf8IsRolledBackAndUndone) {
  fs::path venv = scenario("healthy");
  auto env = env::open_venv_at(venv);
  ASSERT_TRUE(env);
  auto created = venvfix_cli(venv, {"snapshot", "create"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const auto before = print_of(venv);
  const std::string name = "caf\xe9.py";
  auto python = venvfix::testing::run_command(
      {(venv / "bin/python").string(), "-c",
       "import sys; open(sys.argv[1].encode() + b'/caf\\xe9.py', 'w').write('x')",
       env->purelib.string()});
  ASSERT_EQ(python.exit_code, 0) << python.err;
  ASSERT_TRUE(fs::exists(env->purelib / name));

  auto diff = venvfix_cli(venv, {"--json", "snapshot", "diff"});
  EXPECT_EQ(diff.exit_code, 3) << diff.err;
  const auto listed = nlohmann::json::parse(diff.out, nullptr, false);
  ASSERT_FALSE(listed.is_discarded()) << diff.out;
  ASSERT_EQ(listed["added"].size(), 1U) << diff.out;
  EXPECT_TRUE(listed["added"][0].get<std::string>().ends_with("/caf\xef\xbf\xbd.py")) << diff.out;

  auto rolled = venvfix_cli(venv, {"--json", "rollback"});
  ASSERT_EQ(rolled.exit_code, 0) << rolled.err;
  const auto report = nlohmann::json::parse(rolled.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << rolled.out;
  EXPECT_FALSE(fs::exists(env->purelib / name));
  EXPECT_EQ(print_of(venv), before);

  auto undone = venvfix_cli(venv, {"rollback", report["undo_snapshot"].get<std::string>()});
  ASSERT_EQ(undone.exit_code, 0) << undone.err;
  EXPECT_TRUE(fs::exists(env->purelib / name));
}

// How many directories `venvfix -v -v snapshot create` read and how many it carried over from the
// last walk, from its log line ("…, N directories read, M carried over from the last walk, …").
std::pair<int, int> directories_of(const std::string& log) {
  std::size_t at = log.find(" directories read, ");
  if (at == std::string::npos) return {-1, -1};
  std::size_t start = log.rfind(' ', at - 1) + 1;
  return {std::stoi(log.substr(start, at - start)), std::stoi(log.substr(at + 19))};
}

// A later snapshot reads only the directories that changed since the last one; a file written in
// place in between (its directory unchanged, so carried over with its older identity) is part of
// its state, and a real pip uninstall after it is undone byte for byte. A file written in place
// after it is named and refused, the venv left as it is.
TEST_F(RollbackCli, LaterSnapshotCarriesUnchangedDirectoriesAndStillRestoresExactly) {
  fs::path venv = scenario("healthy");
  auto env = env::open_venv_at(venv);
  ASSERT_TRUE(env);
  fs::path edited = env->purelib / "torch/__init__.py";
  ASSERT_EQ(venvfix_cli(venv, {"snapshot", "create"}).exit_code, 0);
  std::ofstream(edited, std::ios::app) << "# edited in place before the snapshot\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the clock moves past the edit
  auto before = print_of(venv);
  auto later = venvfix_cli(venv, {"-v", "-v", "--json", "snapshot", "create"});
  ASSERT_EQ(later.exit_code, 0) << later.err;
  auto [read, carried] = directories_of(later.err);
  EXPECT_GT(carried, 0) << later.err;
  EXPECT_GT(carried, read) << later.err;
  std::string id = nlohmann::json::parse(later.out).at("id").get<std::string>();
  auto pip = venvfix::testing::run_command(
      {(venv / "bin/python").string(), "-m", "pip", "uninstall", "-y", "nvidia-cudnn-cu12"});
  ASSERT_EQ(pip.exit_code, 0) << pip.err;
  auto rolled = venvfix_cli(venv, {"rollback", id});
  ASSERT_EQ(rolled.exit_code, 0) << rolled.err;
  auto after = print_of(venv);
  EXPECT_EQ(after, before) << describe_difference(before, after);

  std::ofstream(edited, std::ios::app) << "# edited in place after the snapshot\n";
  pip = venvfix::testing::run_command(
      {(venv / "bin/python").string(), "-m", "pip", "uninstall", "-y", "nvidia-cudnn-cu12"});
  ASSERT_EQ(pip.exit_code, 0) << pip.err;
  auto print = print_of(venv);
  rolled = venvfix_cli(venv, {"rollback", id});
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
