// Every command's error paths with --json, through the real CLI binary: stdout is exactly one
// `venvfix-error/1` document whose exit_code is the process's exit status (the contract's: 2
// for bad usage or input), and stderr has the same sentence. Argument errors CLI11 finds
// (unknown option, missing argument or value, bad value, unknown command) included, with
// --json before or after the command.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "env/test_support.hpp"
#include "support/paths.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix {
namespace {

using ::testing::HasSubstr;

struct Case {
  std::vector<std::string> args;  // after `venvfix`; "VENV" is replaced by the test's venv
  int exit_code;
  std::string says;  // a part of the error sentence
};

class ErrorDocuments : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = TempDir::create("venvfix-error-documents-");
    ASSERT_TRUE(dir);
    s_dir = new TempDir(std::move(dir).value());
    ASSERT_TRUE(test_support::make_venv(s_dir->path() / "venv"));
    ASSERT_TRUE(write_file_atomic(s_dir->path() / "garbage.json", "{ not a plan\n"));
    ASSERT_TRUE(write_file_atomic(s_dir->path() / "other.json", "{\"schema\": \"other/1\"}\n"));
  }
  static void TearDownTestSuite() {
    delete s_dir;
    s_dir = nullptr;
  }

  // Runs the case and checks the document; the error sentence for further checks.
  static std::string check(const Case& c) {
    std::vector<std::string> argv = {venvfix::testing::venvfix_binary()};
    std::string shown;
    for (std::string arg : c.args) {
      if (arg == "VENV") arg = (s_dir->path() / "venv").string();
      if (arg.rfind("DIR/", 0) == 0) arg = (s_dir->path() / arg.substr(4)).string();
      argv.push_back(arg);
      shown += " " + arg;
    }
    auto result = venvfix::testing::run_command(argv, {{"VIRTUAL_ENV", ""}}, 120);
    EXPECT_EQ(result.exit_code, c.exit_code) << "venvfix" << shown << "\n" << result.err;
    nlohmann::json document = nlohmann::json::parse(result.out, nullptr, false);
    EXPECT_FALSE(document.is_discarded())
        << "venvfix" << shown << ": stdout is not one JSON document:\n"
        << result.out << result.err;
    if (document.is_discarded() || !document.is_object()) return {};
    EXPECT_EQ(document.value("schema", ""), "venvfix-error/1") << shown;
    EXPECT_EQ(document.value("exit_code", -1), result.exit_code) << shown;
    std::string error = document.value("error", "");
    EXPECT_THAT(error, HasSubstr(c.says)) << "venvfix" << shown;
    EXPECT_THAT(result.err, HasSubstr(error)) << shown;
    return error;
  }

  static TempDir* s_dir;
};

TempDir* ErrorDocuments::s_dir = nullptr;

// Each command with an unknown option, --json before the command and after it.
TEST_F(ErrorDocuments, AnUnknownOptionOfEveryCommand) {
  const std::vector<std::vector<std::string>> commands = {{"doctor"},
                                                          {"why", "libz.so.1"},
                                                          {"plan"},
                                                          {"apply"},
                                                          {"uninstall", "x"},
                                                          {"snapshot", "create"},
                                                          {"snapshot", "list"},
                                                          {"snapshot", "show", "x"},
                                                          {"snapshot", "diff", "x"},
                                                          {"snapshot", "delete", "x"},
                                                          {"snapshot", "prune"},
                                                          {"rollback"},
                                                          {"recover"}};
  for (const auto& command : commands) {
    std::vector<std::string> before = {"--json"};
    before.insert(before.end(), command.begin(), command.end());
    before.push_back("--bogus");
    std::string error = check({before, 2, "--bogus"});
    EXPECT_THAT(error, HasSubstr("venvfix " + command.front())) << "names the command";
    std::vector<std::string> after = command;
    after.push_back("--json");
    after.push_back("--bogus");
    check({after, 2, "--bogus"});
  }
  check({{"--json", "run", "--bogus", "--", "true"}, 2, "--bogus"});
  check({{"run", "--json", "--bogus", "--", "true"}, 2, "--bogus"});
  check({{"--json", "--bogus", "doctor"}, 2, "--bogus"});
}

TEST_F(ErrorDocuments, MissingArgumentsAndBadValues) {
  const std::vector<Case> cases = {
      {{"--json", "why"}, 2, "soname is required"},
      {{"--json", "uninstall"}, 2, "dists is required"},
      {{"--json", "run"}, 2, "command is required"},
      {{"--json", "doctor", "--target"}, 2, "--target"},
      {{"--json", "doctor", "--venv"}, 2, "--venv"},
      {{"--json", "doctor", "--probe-timeout", "-1"}, 2, "greater than 0, not '-1'"},
      {{"--json", "--timeout", "soon", "doctor"}, 2, "greater than 0, not 'soon'"},
      {{"--json", "apply", "--load-timeout", "0"}, 2, "greater than 0"},
      {{"--json", "apply", "--link-mode", "sideways"}, 2, "--link-mode"},
      {{"--json", "uninstall", "x", "--repair", "--force"}, 2, "--force"},
  };
  for (const Case& c : cases) check(c);
}

TEST_F(ErrorDocuments, UnknownAndMissingCommands) {
  std::string error = check({{"--json", "frobnicate"}, 2, "unknown command 'frobnicate'"});
  EXPECT_THAT(error, HasSubstr("doctor"));  // lists the commands
  EXPECT_THAT(error, ::testing::Not(HasSubstr("subcommand")));
  check({{"--json", "--venv", "VENV", "frobnicate", "--now"}, 2, "unknown command 'frobnicate'"});
  check({{"--json", "snapshot", "frobnicate"}, 2, "unknown command 'snapshot frobnicate'"});
  check({{"--json"}, 2, "no command given"});
  check({{"--json", "snapshot"}, 2, "venvfix snapshot: no command given"});
  // Without --json the same sentence, on stderr only.
  auto plain = venvfix::testing::run_command({venvfix::testing::venvfix_binary(), "frobnicate"});
  EXPECT_EQ(plain.exit_code, 2);
  EXPECT_EQ(plain.out, "");
  EXPECT_THAT(plain.err, HasSubstr("unknown command 'frobnicate'"));
}

// Every command that opens a venv, on one that does not exist.
TEST_F(ErrorDocuments, ANonexistentVenvForEveryCommand) {
  const std::string missing = (s_dir->path() / "no-such-venv").string();
  const std::vector<std::vector<std::string>> commands = {
      {"doctor"},           {"why", "libz.so.1"},  {"plan"},     {"apply"},
      {"uninstall", "x"},   {"run", "--", "true"}, {"rollback"}, {"recover"},
      {"snapshot", "list"}, {"snapshot", "create"}};
  for (const auto& command : commands) {
    std::vector<std::string> args = {"--json", "--venv", missing};
    args.insert(args.end(), command.begin(), command.end());
    check({args, 2, missing});
  }
}

// Bad input inside a real venv: plan files, names, snapshots, the loader cache.
TEST_F(ErrorDocuments, BadInputInARealVenv) {
  const std::vector<Case> cases = {
      {{"--json", "--venv", "VENV", "apply", "DIR/absent.json"}, 2, "cannot read the plan"},
      {{"--json", "--venv", "VENV", "apply", "DIR/garbage.json"}, 2, "garbage.json is not a plan"},
      {{"--json", "--venv", "VENV", "apply", "DIR/other.json"}, 2, "other.json"},
      {{"--json", "--venv", "VENV", "uninstall", "no-such-dist"}, 2, "no-such-dist"},
      {{"--json", "--venv", "VENV", "plan", "--uninstall", "no-such-dist"}, 2, "no-such-dist"},
      {{"--json", "--venv", "VENV", "snapshot", "show", "nope"}, 2, "no snapshot nope"},
      {{"--json", "--venv", "VENV", "snapshot", "delete", "nope"}, 2, "no snapshot nope"},
      {{"--json", "--venv", "VENV", "rollback"}, 2, "has no snapshots"},
      {{"--json", "--venv", "VENV", "--ld-cache", "DIR/absent-cache", "doctor"}, 2, "--ld-cache"},
  };
  for (const Case& c : cases) check(c);
}

}  // namespace
}  // namespace venvfix
