// `venvfix run -- CMD`: a command that breaks a target is rolled back (exit 5).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/txn_cli_support.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::txn {
namespace {

using testing::print_of;
using testing::venvfix_cli;

class RunCli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-run-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
    m_venv = venvfix::testing::make_scenario("healthy", m_dir->path());
  }
  std::vector<std::string> pip_uninstall_cudnn() const {
    return {"run",
            "--",
            (m_venv / "bin/python").string(),
            "-m",
            "pip",
            "uninstall",
            "-y",
            "nvidia-cudnn-cu12"};
  }
  std::size_t snapshot_count() {
    auto listed = venvfix_cli(m_venv, {"--json", "snapshot", "list"});
    auto document = nlohmann::json::parse(listed.out, nullptr, false);
    EXPECT_FALSE(document.is_discarded()) << listed.out << listed.err;
    EXPECT_EQ(document.value("schema", ""), "venvfix-snapshots/1");
    return document.is_discarded() ? 0 : document["snapshots"].size();
  }
  std::optional<TempDir> m_dir;
  fs::path m_venv;
};

TEST_F(RunCli, BreakingUninstallIsRolledBack) {
  auto before = print_of(m_venv);
  auto result = venvfix_cli(m_venv, pip_uninstall_cudnn());
  EXPECT_EQ(result.exit_code, 5) << result.out << result.err;
  EXPECT_NE(result.err.find("libcudnn.so.9"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("rolled back"), std::string::npos) << result.err;
  auto after = print_of(m_venv);
  EXPECT_EQ(after, before) << describe_difference(before, after);
  EXPECT_EQ(snapshot_count(), 0u);
}

TEST_F(RunCli, KeepOnlyReports) {
  auto result = venvfix_cli(m_venv, [&] {
    auto args = pip_uninstall_cudnn();
    args.insert(args.begin() + 1, "--keep");
    return args;
  }());
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("nothing was rolled back"), std::string::npos) << result.err;
  auto venv = env::open_venv_at(m_venv);
  ASSERT_TRUE(venv);
  fs::path cudnn = venv->purelib / "nvidia/cudnn/lib/libcudnn.so.9";
  EXPECT_FALSE(fs::exists(cudnn)) << "--keep rolled back";
  EXPECT_EQ(snapshot_count(), 1u);
  EXPECT_EQ(venvfix_cli(m_venv, {"rollback"}).exit_code, 0);
  EXPECT_TRUE(fs::exists(cudnn));
}

// A change only the probe sees: torch/__init__.py rewritten with the same size (the static
// check compares RECORD sizes of Python files, hashes only libraries), so `import torch` breaks.
TEST_F(RunCli, ABreakOnlyTheProbeSeesIsRolledBack) {
  auto venv = env::open_venv_at(m_venv);
  ASSERT_TRUE(venv);
  // Written to a new file and renamed over the old one, as pip and editors do (an in-place
  // write would change the snapshot's hard-linked copy too, which rollback refuses).
  const std::string edit = "import os\np = '" + (venv->purelib / "torch/__init__.py").string() +
                           "'\ns = open(p).read().replace('import ctypes\\n', 'import ctypeX\\n', "
                           "1)\nopen(p + '.new', 'w').write(s)\nos.replace(p + '.new', p)";
  const std::vector<std::string> command = {"--", (m_venv / "bin/python").string(), "-c", edit};
  auto before = print_of(m_venv);
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), command.begin(), command.end());
  auto result = venvfix_cli(m_venv, args);
  EXPECT_EQ(result.exit_code, 5) << result.out << result.err;
  EXPECT_NE(result.err.find("probe: `import torch` failed"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("No module named 'ctypeX'"), std::string::npos) << result.err;
  auto after = print_of(m_venv);
  EXPECT_EQ(after, before) << describe_difference(before, after);

  // --no-probe: only the static check, which this edit passes.
  args = {"run", "--no-probe"};
  args.insert(args.end(), command.begin(), command.end());
  EXPECT_EQ(venvfix_cli(m_venv, args).exit_code, 0);
}

TEST_F(RunCli, HarmlessCommandKeepsItsStatus) {
  auto before = print_of(m_venv);
  EXPECT_EQ(venvfix_cli(m_venv, {"run", "--", "sh", "-c", "exit 7"}).exit_code, 7);
  EXPECT_EQ(venvfix_cli(m_venv, {"run", "--", "true"}).exit_code, 0);
  EXPECT_EQ(snapshot_count(), 0u);
  EXPECT_EQ(venvfix_cli(m_venv, {"run", "--snapshot", "--", "true"}).exit_code, 0);
  EXPECT_EQ(snapshot_count(), 1u);
  EXPECT_EQ(print_of(m_venv), before);
}

}  // namespace
}  // namespace venvfix::txn
