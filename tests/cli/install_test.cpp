// What `cmake --install` lays out, run from the installed place: the binary finds the manifests
// installed beside it (not the source tree it was built from), `--version` says their date, the
// man page and the bash completion are where man and bash-completion look, and the completion
// answers from the installed binary's own help.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/paths.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

class Install : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = TempDir::create("venvfix-install-test-");
    ASSERT_TRUE(dir);
    s_dir = new TempDir(std::move(dir).value());
    const fs::path build_dir = fs::path(venvfix_binary()).parent_path();
    CommandResult installed = run_command(
        {"cmake", "--install", build_dir.string(), "--prefix", prefix().string()}, {}, 300);
    ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  }
  static void TearDownTestSuite() {
    delete s_dir;
    s_dir = nullptr;
  }
  static fs::path prefix() { return s_dir->path() / "usr local"; }
  // The installed binary with no hint where the manifests are.
  static CommandResult venvfix(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env", "-u", "VENVFIX_MANIFEST_DIR",
                                     (prefix() / "bin/venvfix").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, {}, 120);
  }

  static TempDir* s_dir;
};
TempDir* Install::s_dir = nullptr;

TEST_F(Install, TheBinaryFindsTheManifestsInstalledBesideItAndSaysTheirDate) {
  for (const char* file :
       {"bin/venvfix", "share/venvfix/manifests/torch.json",
        "share/venvfix/manifests/nvidia-wheels.json",
        "share/venvfix/manifests/system-libraries.json", "share/man/man1/venvfix.1",
        "share/bash-completion/completions/venvfix"}) {
    EXPECT_TRUE(fs::exists(prefix() / file)) << file;
  }
  CommandResult version = venvfix({"--version"});
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_THAT(version.out, MatchesRegex("venvfix [0-9]+\\.[0-9]+\\.[0-9]+ \\(manifests of "
                                        "[0-9]{4}-[0-9]{2}-[0-9]{2}, .*\\)\n"));
  EXPECT_THAT(version.out, HasSubstr((prefix() / "share/venvfix/manifests").string()));
  // Broken manifests are named, not hidden behind a version string.
  fs::path torch = prefix() / "share/venvfix/manifests/torch.json";
  ASSERT_TRUE(write_file_atomic(
      torch, "{\"schema\": \"venvfix-manifest-torch/1\", \"updated\": \"soon\"}"));
  CommandResult broken = venvfix({"--version"});
  EXPECT_THAT(broken.out, HasSubstr("no usable manifests"));
  EXPECT_THAT(broken.out, HasSubstr("torch.json"));
  CommandResult restored =
      run_command({"cp", (source_dir() / "manifests/torch.json").string(), torch.string()});
  ASSERT_EQ(restored.exit_code, 0);
}

TEST_F(Install, TheManPageIsTheOneInDocs) {
  auto installed = read_file(prefix() / "share/man/man1/venvfix.1", 1 << 20);
  auto source = read_file(source_dir() / "docs/venvfix.1", 1 << 20);
  ASSERT_TRUE(installed && source);
  EXPECT_EQ(*installed, *source);
}

TEST_F(Install, BashCompletesCommandsSubcommandsOptionsAndValues) {
  const std::string script =
      "source '" + (prefix() / "share/bash-completion/completions/venvfix").string() + "'\n" +
      "try() { COMP_WORDS=(\"$@\"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _venvfix; "
      "echo \"${COMPREPLY[*]}\"; }\n"
      "b='" +
      (prefix() / "bin/venvfix").string() +
      "'\n"
      "try \"$b\" ''\ntry \"$b\" snapshot ''\ntry \"$b\" --json apply --sn\n"
      "try \"$b\" apply --link-mode ''\ntry \"$b\" doctor --pr\ntry \"$b\" cache ''\n"
      "try \"$b\" cache prune --unu\ncomplete -p venvfix\n";
  CommandResult completed =
      run_command({"env", "-u", "VENVFIX_MANIFEST_DIR", "bash", "--norc", "-c", script}, {}, 120);
  ASSERT_EQ(completed.exit_code, 0) << completed.err;
  const auto lines = split(completed.out, '\n');
  ASSERT_GE(lines.size(), 8U) << completed.out;
  EXPECT_EQ(lines[0],
            "doctor why plan snapshot rollback recover run apply fetch cache uninstall guard "
            "shell-hook");
  EXPECT_EQ(lines[1], "create list show diff delete prune");
  EXPECT_EQ(lines[2], "--snapshot");
  EXPECT_EQ(lines[3], "hardlink copy");
  EXPECT_EQ(lines[4], "--probe --probe-cmd --probe-timeout");
  EXPECT_EQ(lines[5], "dir info prune");
  EXPECT_EQ(lines[6], "--unused-for");
  EXPECT_EQ(lines[7], "complete -F _venvfix venvfix");
}

}  // namespace
}  // namespace venvfix::testing
