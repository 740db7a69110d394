// `venvfix run -- CMD`: a command that breaks a target is rolled back (exit 5).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/txn_cli_support.hpp"
#include "elf/elf_test_support.hpp"
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
  // `run -vv` of a command that appends `text` to `file` as pip writes files: a new file renamed
  // over the old one.
  venvfix::testing::CommandResult run_appending(const fs::path& file,
                                                const std::string& text) const {
    const std::string append =
        "import os, sys\np = sys.argv[1]\n"
        "open(p + '.new', 'w').write(open(p).read() + sys.argv[2])\n"
        "os.rename(p + '.new', p)\n";
    return venvfix_cli(m_venv, {"-v", "-v", "run", "--no-probe", "--", "python3", "-c", append,
                                file.string(), text});
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

// A command that changed nothing in the venv is not analysed again (its state after is its state
// before), and its snapshot goes without dropping the store links: they are the venv's own files,
// and the next run needs them (it links nothing new).
TEST_F(RunCli, CommandThatChangesNothingIsNotAnalysedAgain) {
  auto before = print_of(m_venv);
  auto first = venvfix_cli(m_venv, {"-v", "-v", "run", "--", "true"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("changed nothing in the venv"), std::string::npos) << first.err;
  EXPECT_EQ(first.err.find("analysis: inventory", first.err.find("changed nothing")),
            std::string::npos)
      << "analysed after the command:\n"
      << first.err;
  EXPECT_EQ(snapshot_count(), 0u);
  EXPECT_FALSE(fs::is_empty(m_venv / ".venvfix/store"));
  auto second = venvfix_cli(m_venv, {"-v", "-v", "run", "--", "true"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find(" 0 new store links"), std::string::npos) << second.err;
  EXPECT_EQ(print_of(m_venv), before);
}

// A command that writes a file in place changes no directory: it is still seen (the file's own
// identity changed), analysed and judged. Here it damages torch (its RECORD size no longer
// matches), and the rollback refuses, naming the file, since the snapshot shares its inode.
TEST_F(RunCli, CommandWritingAFileInPlaceIsStillJudged) {
  auto venv = env::open_venv_at(m_venv);
  ASSERT_TRUE(venv);
  const fs::path file = venv->purelib / "torch/__init__.py";
  auto result = venvfix_cli(m_venv, {"run", "--no-probe", "--", "sh", "-c",
                                     "printf '# in place\\n' >> \"$1\"", "sh", file.string()});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("torch/__init__.py was changed in place"), std::string::npos)
      << result.err;
}

// The analysis after the command reads again only the distributions whose metadata directory
// the command touched, and takes the others as the analysis before read them: a RECORD the
// command rewrote (here torch's, now listing a library that is not there) is read again, judged,
// and rolled back; a command that touches no metadata directory reads none again.
TEST_F(RunCli, TheAnalysisAfterReadsAgainOnlyTheMetadataTheCommandTouched) {
  auto venv = env::open_venv_at(m_venv);
  ASSERT_TRUE(venv);
  auto dist_info = std::find_if(fs::directory_iterator(venv->purelib), fs::directory_iterator(),
                                [](const fs::directory_entry& entry) {
                                  const std::string name = entry.path().filename().string();
                                  return name.starts_with("torch-") && name.ends_with(".dist-info");
                                });
  ASSERT_NE(dist_info, fs::directory_iterator());
  const fs::path record = dist_info->path() / "RECORD";
  const std::size_t distributions = static_cast<std::size_t>(std::count_if(
      fs::directory_iterator(venv->purelib), fs::directory_iterator(),
      [](const fs::directory_entry& entry) { return entry.path().extension() == ".dist-info"; }));
  const auto before = print_of(m_venv);
  auto rewrote = run_appending(record, "torch/lib/libghost.so.1,sha256=AAAA,10\n");
  EXPECT_EQ(rewrote.exit_code, 5) << rewrote.out << rewrote.err;
  EXPECT_NE(rewrote.err.find("libghost.so.1"), std::string::npos) << rewrote.err;
  EXPECT_NE(
      rewrote.err.find(fmt::format("analysis: 1 of {} distributions read again", distributions)),
      std::string::npos)
      << rewrote.err;
  const auto after = print_of(m_venv);
  EXPECT_EQ(after, before) << describe_difference(before, after);
  auto added = venvfix_cli(m_venv, {"-v", "-v", "run", "--no-probe", "--", "touch",
                                    (venv->purelib / "harmless_new_module.py").string()});
  EXPECT_EQ(added.exit_code, 0) << added.err;
  EXPECT_NE(
      added.err.find(fmt::format("analysis: 0 of {} distributions read again", distributions)),
      std::string::npos)
      << added.err;
}

// A library the analysis before read, replaced by the command (a new file renamed over it, as pip
// writes files) with one that needs a soname nothing provides: the analysis after keeps the ELF
// reads whose stat did not change and reads this one again, so the break is found and rolled
// back. (A removed library is seen in its directory's listing; a replaced one only in its stat.)
TEST_F(RunCli, ALibraryReplacedByTheCommandIsReadAgainByTheAnalysisAfter) {
  auto venv = env::open_venv_at(m_venv);
  ASSERT_TRUE(venv);
  const fs::path library = venv->purelib / "torch/lib/libc10_cuda.so";
  ASSERT_TRUE(fs::exists(library));
  const fs::path gone = m_dir->path() / "build/libvenvfix_gone.so.1";
  const fs::path replacement = m_dir->path() / "build/libc10_cuda.so";
  elf::testing::build_shared_object(gone, elf::testing::SharedObject("libvenvfix_gone.so.1"));
  elf::testing::build_shared_object(replacement,
                                    elf::testing::SharedObject("libc10_cuda.so").needs(gone));
  // A kept snapshot first, as a guarded venv has: the store holds every file, so run's snapshot
  // links none anew (a new link changes a file's ctime, and the memo reads it again). Then every
  // file settled (its last change, that link, over 100 ms old) before the analysis reads it: a
  // change after would show in its stat, so a memo that skipped the stat would take the old
  // reading, and only the replaced library is read again.
  ASSERT_EQ(venvfix_cli(m_venv, {"snapshot", "create"}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  auto identity = file_identity_follow(library);
  ASSERT_TRUE(identity);
  ASSERT_TRUE(changed_well_before(*identity, realtime_ns()));
  const auto before = print_of(m_venv);
  auto replaced = venvfix_cli(m_venv, {"-v", "-v", "run", "--no-probe", "--", "sh", "-c",
                                       "cp \"$1\" \"$2.new\" && mv \"$2.new\" \"$2\"", "sh",
                                       replacement.string(), library.string()});
  EXPECT_EQ(replaced.exit_code, 5) << replaced.out << replaced.err;
  EXPECT_NE(replaced.err.find("libvenvfix_gone.so.1"), std::string::npos) << replaced.err;
  EXPECT_NE(replaced.err.find("1 ELF paths read, "), std::string::npos)
      << "the analysis after did not read just the replaced library again\n"
      << replaced.err;
  const auto after = print_of(m_venv);
  EXPECT_EQ(after, before) << describe_difference(before, after);
}

// The file check after the command takes each file's identity from the comparison with the
// snapshot, which stat'ed every file after the command ended, instead of a second stat: a file
// the command replaced (here torch's __init__.py, longer, renamed over it as pip writes files)
// is judged by its new identity, so its size no longer matches RECORD and the command is rolled
// back; no file is stat'ed twice.
TEST_F(RunCli, TheFileCheckAfterJudgesEachFileByTheStatOfTheComparison) {
  auto venv = env::open_venv_at(m_venv);
  ASSERT_TRUE(venv);
  const fs::path module = venv->purelib / "torch/__init__.py";
  ASSERT_TRUE(fs::exists(module));
  const auto before = print_of(m_venv);
  auto result = run_appending(module, "# more\n");
  EXPECT_EQ(result.exit_code, 5) << result.out << result.err;
  EXPECT_NE(result.err.find("differs from its RECORD (torch/__init__.py)"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("files: 0 of "), std::string::npos) << result.err;
  const auto after = print_of(m_venv);
  EXPECT_EQ(after, before) << describe_difference(before, after);
}

// A venv whose own site-packages lies behind a symlink below its root (lib -> elsewhere): the
// snapshot records the symlink and does not enter it, so `run` could not roll back what a
// command changes there. It refuses before running the command, naming the symlink.
TEST_F(RunCli, ASitePackagesBehindASymlinkIsRefusedBeforeTheCommand) {
  const fs::path moved = m_dir->path() / "lib-elsewhere";
  fs::rename(m_venv / "lib", moved);
  fs::create_directory_symlink(moved, m_venv / "lib");
  auto venv = env::open_venv_at(m_venv);
  ASSERT_TRUE(venv);
  const fs::path cudnn = venv->purelib / "nvidia/cudnn/lib/libcudnn.so.9";
  ASSERT_TRUE(fs::exists(cudnn));
  auto result = venvfix_cli(m_venv, {"run", "--no-probe", "--", "rm", cudnn.string()});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find((m_venv / "lib").string() + " is a symlink"), std::string::npos)
      << result.err;
  EXPECT_TRUE(fs::exists(cudnn)) << "the command ran";
  EXPECT_FALSE(fs::exists(m_venv / ".venvfix/snapshots") &&
               !fs::is_empty(m_venv / ".venvfix/snapshots"))
      << "a snapshot was taken";
  // `snapshot create` takes one, and says what it does not hold.
  auto created = venvfix_cli(m_venv, {"snapshot", "create"});
  EXPECT_EQ(created.exit_code, 0) << created.err;
  EXPECT_NE(created.err.find((m_venv / "lib").string() + " is a symlink"), std::string::npos)
      << created.err;
  EXPECT_NE(created.err.find("a rollback cannot restore the files there"), std::string::npos);
}

}  // namespace
// The probe starts beside the analysis after the command, with the statement the targets before
// the command name (`import torch`). A command that changes the targets changes the statement:
// here torch and the NVIDIA distributions are removed (files and dist-info, so nothing is left
// broken), and the early `import torch` fails. That failure must not judge the command: after it,
// nothing names torch as a target, so no probe runs and nothing is rolled back.
TEST_F(RunCli, AnEarlyProbeOfATargetTheCommandRemovedIsNotUsed) {
  auto venv = env::open_venv_at(m_venv);
  ASSERT_TRUE(venv);
  const std::string script =
      "import glob, os, shutil, sys\n"
      "for pattern in ('torch', 'torch-*.dist-info', 'nvidia', 'nvidia_*.dist-info'):\n"
      "    for d in glob.glob(os.path.join(sys.argv[1], pattern)): shutil.rmtree(d)\n";
  auto result = venvfix_cli(m_venv, {"-v", "-v", "run", "--", (m_venv / "bin/python").string(),
                                     "-c", script, venv->purelib.string()});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.err.find("probe `import torch` started beside the analysis after"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("the early probe `import torch` is not used (no probe)"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(fs::exists(venv->purelib / "torch")) << "rolled back";
}

}  // namespace venvfix::txn
