// The guard on a test-world venv made by the real pip, driven the way a user meets it: pip's own
// bin/pip script (now the wrapper), `python -m pip` through the shell hook in a real interactive
// bash on a pty, VENVFIX_GUARD=0, and `guard disable` putting back exactly what was there.
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/txn_cli_support.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/guard/guard.hpp"

namespace venvfix::guard {
namespace {

using ::testing::HasSubstr;
using txn::testing::print_of;
using txn::testing::venvfix_cli;
using venvfix::testing::CommandResult;
using venvfix::testing::run_command;

class GuardCli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-guard-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
    m_venv = venvfix::testing::make_scenario("healthy", m_dir->path());
  }
  // What the wrappers' venvfix needs to see the test world's loader view, as a user's would see
  // the host's: the environment, not a command-line option.
  std::map<std::string, std::string> env() const {
    return {{"VENVFIX_LD_CACHE", venvfix::testing::test_world().hermetic_cache.string()},
            {"LD_LIBRARY_PATH", ""}};
  }
  CommandResult pip(const std::vector<std::string>& args,
                    std::map<std::string, std::string> extra = {}) const {
    std::vector<std::string> argv = {(m_venv / "bin/pip").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto environment = env();
    environment.merge(extra);
    return run_command(argv, environment, 300);
  }
  fs::path cudnn() const {
    return env::open_venv_at(m_venv)->purelib / "nvidia/cudnn/lib/libcudnn.so.9";
  }
  std::size_t snapshot_count() const {
    auto listed = venvfix_cli(m_venv, {"--json", "snapshot", "list"});
    auto document = nlohmann::json::parse(listed.out, nullptr, false);
    return document.is_object() ? document["snapshots"].size() : 0;
  }
  // A pure-Python wheel `harmless` of `version` whose one module says the version.
  fs::path harmless_wheel(const std::string& version) const {
    const fs::path wheel_dir = m_dir->path() / "wheels";
    fs::create_directories(wheel_dir);
    return venvfix::testing::make_module_wheel("harmless", version, wheel_dir);
  }
  std::vector<std::string> snapshot_reasons() const {
    auto listed = venvfix_cli(m_venv, {"--json", "snapshot", "list"});
    auto document = nlohmann::json::parse(listed.out, nullptr, false);
    std::vector<std::string> reasons;
    if (!document.is_object()) return reasons;
    for (const auto& snapshot : document["snapshots"]) reasons.push_back(snapshot["reason"]);
    return reasons;
  }
  nlohmann::json guard_status() const {
    auto shown = venvfix_cli(m_venv, {"--json", "guard", "status"});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    return nlohmann::json::parse(shown.out, nullptr, false);
  }

  std::optional<TempDir> m_dir;
  fs::path m_venv;
};

TEST_F(GuardCli, ABreakingPipUninstallIsRolledBackAndSaysWhy) {
  auto enabled = venvfix_cli(m_venv, {"guard", "enable"});
  ASSERT_EQ(enabled.exit_code, 0) << enabled.err;
  EXPECT_THAT(enabled.out, HasSubstr("bin/pip wrapped"));
  EXPECT_TRUE(is_wrapper(m_venv / "bin/pip"));
  const auto before = print_of(m_venv);
  CommandResult uninstalled = pip({"uninstall", "-y", "nvidia-cudnn-cu12"});
  EXPECT_EQ(uninstalled.exit_code, 5) << uninstalled.out << uninstalled.err;
  EXPECT_THAT(uninstalled.err, HasSubstr("libcudnn.so.9"));
  EXPECT_THAT(uninstalled.err, HasSubstr("rolled back"));
  EXPECT_TRUE(fs::exists(cudnn()));
  const auto after = print_of(m_venv);
  EXPECT_EQ(after, before) << txn::describe_difference(before, after);
  // doctor says the guard is on.
  auto doctor = venvfix_cli(m_venv, {"--json", "doctor"});
  EXPECT_EQ(nlohmann::json::parse(doctor.out, nullptr, false).value("guard", false), true);
}

TEST_F(GuardCli, ReadOnlyAndHarmlessCommandsPassThrough) {
  ASSERT_EQ(venvfix_cli(m_venv, {"guard", "enable"}).exit_code, 0);
  CommandResult listed = pip({"list", "--format=freeze"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("nvidia-cudnn-cu12=="));
  EXPECT_EQ(snapshot_count(), 0U) << "a read-only command took a snapshot";
  // A harmless wheel installs under the guard (the snapshot stays for `venvfix rollback`).
  const fs::path wheel = harmless_wheel("1.0");
  CommandResult installed = pip({"install", "--no-deps", "--no-index", wheel.string()});
  EXPECT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  EXPECT_TRUE(fs::exists(env::open_venv_at(m_venv)->purelib / "harmless.py"));
  EXPECT_EQ(snapshot_count(), 1U);
}

TEST_F(GuardCli, VenvfixGuardZeroRunsOneCommandUnguarded) {
  ASSERT_EQ(venvfix_cli(m_venv, {"guard", "enable"}).exit_code, 0);
  CommandResult uninstalled =
      pip({"uninstall", "-y", "nvidia-cudnn-cu12"}, {{"VENVFIX_GUARD", "0"}});
  EXPECT_EQ(uninstalled.exit_code, 0) << uninstalled.err;
  EXPECT_FALSE(fs::exists(cudnn()));
  EXPECT_EQ(snapshot_count(), 0U);
}

TEST_F(GuardCli, DisableLeavesTheVenvExactlyAsBeforeEnable) {
  struct stat original {};
  ASSERT_EQ(::lstat((m_venv / "bin/pip").c_str(), &original), 0);
  const auto before = print_of(m_venv);
  ASSERT_FALSE(fs::exists(m_venv / ".venvfix"));
  ASSERT_EQ(venvfix_cli(m_venv, {"guard", "enable"}).exit_code, 0);
  ASSERT_EQ(venvfix_cli(m_venv, {"guard", "enable"}).exit_code, 0) << "enable is idempotent";
  nlohmann::json on = guard_status();
  EXPECT_EQ(on["enabled"], true);
  EXPECT_GE(on["scripts"].size(), 2U) << on.dump();  // pip, pip3, pip3.X
  for (const auto& script : on["scripts"]) EXPECT_EQ(script["intact"], true) << script;
  EXPECT_NE(print_of(m_venv), before);
  auto disabled = venvfix_cli(m_venv, {"guard", "disable"});
  ASSERT_EQ(disabled.exit_code, 0) << disabled.err;
  const auto after = print_of(m_venv);
  EXPECT_EQ(after, before) << txn::describe_difference(before, after);
  struct stat restored {};
  ASSERT_EQ(::lstat((m_venv / "bin/pip").c_str(), &restored), 0);
  EXPECT_EQ(restored.st_ino, original.st_ino);
  EXPECT_EQ(restored.st_mtim.tv_nsec, original.st_mtim.tv_nsec);
  EXPECT_EQ(restored.st_mode, original.st_mode);
  EXPECT_FALSE(fs::exists(m_venv / ".venvfix")) << "the guard made .venvfix and left it";
  EXPECT_EQ(guard_status()["enabled"], false);
}

TEST_F(GuardCli, AScriptPipRewroteIsNamedAndLeftAsPipWroteIt) {
  ASSERT_EQ(venvfix_cli(m_venv, {"guard", "enable"}).exit_code, 0);
  ASSERT_TRUE(write_file_atomic(m_venv / "bin/pip3", "#!/bin/sh\necho rewritten\n", 0755));
  nlohmann::json shown = guard_status();
  bool named = false;
  for (const auto& script : shown["scripts"]) {
    if (script["name"] == "bin/pip3") named = script["intact"] == false;
  }
  EXPECT_TRUE(named) << shown.dump();
  ASSERT_EQ(venvfix_cli(m_venv, {"guard", "disable"}).exit_code, 0);
  EXPECT_EQ(read_file(m_venv / "bin/pip3").value_or(""), "#!/bin/sh\necho rewritten\n");
  EXPECT_FALSE(is_wrapper(m_venv / "bin/pip"));
}

TEST_F(GuardCli, TheShellHookGuardsPythonDashMPipInAnInteractiveBash) {
  ASSERT_EQ(venvfix_cli(m_venv, {"guard", "enable"}).exit_code, 0);
  const fs::path rc = m_dir->path() / "session.sh";
  ASSERT_TRUE(write_file_atomic(
      rc, "source '" + (m_venv / "bin/activate").string() + "'\n" + "eval \"$('" +
              venvfix::testing::venvfix_binary() + "' shell-hook bash)\"\n" +
              "type python | head -1\n"
              "python -m pip uninstall -y nvidia-cudnn-cu12\n"
              "echo \"guarded-status=$?\"\n"
              "VENVFIX_GUARD=0 python -m pip --version >/dev/null; echo \"plain-status=$?\"\n"
              "exit\n"));
  // script(1) gives bash a pty, so it is a real interactive shell (job control, prompts).
  CommandResult session = run_command(
      {"script", "-qec", "bash --norc --noprofile -i " + rc.string(), "/dev/null"}, env(), 300);
  EXPECT_THAT(session.out, HasSubstr("python is a function"));
  EXPECT_THAT(session.out, HasSubstr("guarded-status=5")) << session.out << session.err;
  EXPECT_THAT(session.out, HasSubstr("libcudnn.so.9"));
  EXPECT_THAT(session.out, HasSubstr("plain-status=0"));
  EXPECT_TRUE(fs::exists(cudnn()));
}

// Every guarded command keeps a snapshot, and a snapshot's store links keep the files the
// command replaced: without a limit the guard would grow the venv by every upgrade. The guard
// keeps the newest N of its own snapshots, never another's, and the files only the pruned ones
// held are freed.
TEST_F(GuardCli, TheGuardKeepsTheNewestNOfItsSnapshotsAndFreesWhatOnlyTheOthersHeld) {
  auto enabled = venvfix_cli(m_venv, {"guard", "enable", "--keep", "2"});
  ASSERT_EQ(enabled.exit_code, 0) << enabled.err;
  EXPECT_EQ(guard_status()["keep"], 2);
  ASSERT_EQ(venvfix_cli(m_venv, {"guard", "enable"}).exit_code, 0);
  EXPECT_EQ(guard_status()["keep"], 2) << "enable again kept the limit it was given";
  auto none_kept = venvfix_cli(m_venv, {"guard", "enable", "--keep", "0"});
  EXPECT_EQ(none_kept.exit_code, 2) << none_kept.err;
  EXPECT_THAT(none_kept.err, HasSubstr("--keep must be 1 or more"));
  EXPECT_EQ(guard_status()["keep"], 2);
  ASSERT_EQ(venvfix_cli(m_venv, {"snapshot", "create"}).exit_code, 0);  // the user's own
  const fs::path module = env::open_venv_at(m_venv)->purelib / "harmless.py";
  // The store name of what `module` is now (link_store.hpp: dev-ino-size-mtime-mode).
  auto store_name_of_module = [&] {
    struct stat st {};
    EXPECT_EQ(::lstat(module.c_str(), &st), 0) << module;
    return fmt::format("{:x}-{:x}-{:x}-{:x}-{:o}", st.st_dev, st.st_ino, st.st_size,
                       st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec,
                       st.st_mode & 07777);
  };
  const fs::path store = m_venv / ".venvfix/store";
  std::string first_module;
  for (const std::string version : {"1.0", "2.0", "3.0"}) {
    CommandResult installed =
        pip({"install", "--no-deps", "--no-index", harmless_wheel(version).string()});
    ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
    if (version == "1.0") first_module = store_name_of_module();
  }
  // Guard snapshots before 1.0, 2.0 and 3.0: the first went; the one before 3.0 holds 1.0's module.
  EXPECT_EQ(snapshot_reasons().size(), 3U);
  EXPECT_TRUE(fs::exists(store / first_module)) << "a kept snapshot still holds it";
  CommandResult uninstalled = pip({"uninstall", "-y", "harmless"});
  ASSERT_EQ(uninstalled.exit_code, 0) << uninstalled.out << uninstalled.err;
  const std::vector<std::string> reasons = snapshot_reasons();
  ASSERT_EQ(reasons.size(), 3U) << ::testing::PrintToString(reasons);
  EXPECT_EQ(reasons[0], "snapshot create") << "the guard pruned a snapshot it did not take";
  EXPECT_THAT(reasons[1], ::testing::StartsWith("guard: "));
  EXPECT_THAT(reasons[1], HasSubstr("harmless-3.0"));
  EXPECT_THAT(reasons[2], HasSubstr("uninstall -y harmless"));
  EXPECT_FALSE(fs::exists(store / first_module)) << "1.0's module is held by no kept snapshot";
  // The oldest guard snapshot kept still restores (harmless 2.0, before 3.0 was installed).
  auto listed = nlohmann::json::parse(venvfix_cli(m_venv, {"--json", "snapshot", "list"}).out);
  const std::string before_three = listed["snapshots"][1]["id"];
  auto rolled_back = venvfix_cli(m_venv, {"rollback", before_three});
  ASSERT_EQ(rolled_back.exit_code, 0) << rolled_back.err;
  EXPECT_EQ(read_file(module).value_or(""), "VERSION = '2.0'\n");
  // A state whose limit cannot be read is named; a guarded command still runs, keeping the default.
  const fs::path state = m_venv / ".venvfix/guard/guard.json";
  auto document = nlohmann::json::parse(read_file(state).value_or(""), nullptr, false);
  document["keep"] = 0;
  ASSERT_TRUE(write_file_atomic(state, document.dump()));
  auto shown = venvfix_cli(m_venv, {"guard", "status"});
  EXPECT_EQ(shown.exit_code, 1);
  EXPECT_THAT(shown.err, HasSubstr(state.string()));
  EXPECT_THAT(shown.err, HasSubstr("\"keep\" is 0"));
  // `true` stands in for pip: the classifier reads `install` as a change, so it runs guarded.
  auto guarded = venvfix_cli(m_venv, {"guard", "exec", "--", "true", "install", "nothing"});
  EXPECT_EQ(guarded.exit_code, 0) << guarded.err;
  EXPECT_THAT(guarded.err, HasSubstr("keeping the newest 10 of the guard's snapshots"));
}

// The guard prunes while the installer runs. At a limit of one, the snapshot taken for a breaking
// uninstall is the one kept: the older one goes, with the link of a file only it held, while pip
// uninstalls, and the rollback still puts back every file exactly.
TEST_F(GuardCli, AtItsLimitTheGuardPrunesBesideTheCommandAndStillRollsBack) {
  ASSERT_EQ(venvfix_cli(m_venv, {"guard", "enable", "--keep", "1"}).exit_code, 0);
  const std::string wheel = harmless_wheel("1.0").string();
  ASSERT_EQ(pip({"install", "--no-deps", "--no-index", wheel}).exit_code, 0);
  CommandResult reinstalled =
      pip({"install", "--no-deps", "--no-index", "--force-reinstall", wheel});
  ASSERT_EQ(reinstalled.exit_code, 0) << reinstalled.err;
  const std::vector<std::string> before_uninstall = snapshot_reasons();
  ASSERT_EQ(before_uninstall.size(), 1U);
  EXPECT_THAT(before_uninstall[0], HasSubstr("--force-reinstall"));
  const auto before = print_of(m_venv);
  CommandResult uninstalled = pip({"uninstall", "-y", "nvidia-cudnn-cu12"});
  EXPECT_EQ(uninstalled.exit_code, 5) << uninstalled.out << uninstalled.err;
  EXPECT_THAT(uninstalled.err, HasSubstr("rolled back"));
  const auto after = print_of(m_venv);
  EXPECT_EQ(after, before) << txn::describe_difference(before, after);
  const std::vector<std::string> reasons = snapshot_reasons();
  ASSERT_EQ(reasons.size(), 1U) << ::testing::PrintToString(reasons);
  EXPECT_THAT(reasons[0], HasSubstr("uninstall -y nvidia-cudnn-cu12"));
}

}  // namespace
}  // namespace venvfix::guard
