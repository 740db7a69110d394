// The guard starts a pip console script held (apply/held_command.hpp): its interpreter imports
// the script's modules while venvfix waits for the venv's lock, snapshots and analyses, and the
// script itself runs only after that. The script here is a stand-in for pip's, written as pip
// writes console scripts, whose module notes when it is imported and when its main runs; the
// test holds the venv's lock itself, so what happens before venvfix can take its snapshot is
// seen, not guessed from timings.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/syscall.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "cli/txn_cli_support.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::guard {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using txn::testing::venvfix_cli;
using venvfix::testing::CommandResult;

// The stand-in's module: each line it notes is "<what> <pid> …".
constexpr const char* k_probe_module = R"PY(import os, sys

def note(line):
    with open(os.environ["HELD_MARKER"], "a") as f:
        f.write(line + "\n")

note("imported %d" % os.getpid())

def main():
    import heldlater  # imported once released: its bytecode is written as usual
    snapshots = os.listdir(os.path.join(os.environ["HELD_VENV"], ".venvfix", "snapshots"))
    note("main %d %d %s" % (os.getpid(), len(snapshots), " ".join(sys.argv[1:])))
    note("argv0 " + sys.argv[0])
    return int(os.environ.get("HELD_STATUS", "0"))
)PY";

class GuardHeld : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-guard-held-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
    m_venv = venvfix::testing::make_scenario("healthy", m_dir->path());
    fs::create_directories(m_dir->path() / "tool");
    std::ofstream(m_dir->path() / "tool/heldprobe.py") << k_probe_module;
    std::ofstream(m_dir->path() / "tool/heldlater.py") << "X = 1\n";
  }
  // A script named pip in the test's own directory (beside heldprobe.py: sys.path[0] must be
  // the script's directory), run by the venv's interpreter.
  fs::path script(const std::string& body) const {
    fs::path path = m_dir->path() / "tool/pip";
    std::ofstream(path) << "#!" << (m_venv / "bin/python").string() << "\n" << body;
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }
  fs::path console_script() const {
    return script(
        "# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom heldprobe import main\n"
        "if __name__ == '__main__':\n"
        "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
        "    sys.exit(main())\n");
  }
  std::future<CommandResult> guarded(const fs::path& tool, const fs::path& venv,
                                     std::map<std::string, std::string> extra = {}) const {
    extra.emplace("HELD_MARKER", marker().string());
    extra.emplace("HELD_VENV", m_venv.string());
    extra.emplace("PYTHONDONTWRITEBYTECODE", "");  // bytecode written as Python writes it
    return std::async(std::launch::async, [=] {
      return venvfix_cli(venv,
                         {"guard", "exec", "--tool", "pip", "--", tool.string(), "install",
                          "--no-deps", "somewheel"},
                         extra);
    });
  }
  // A one-module wheel (held.py) for the real pip to install.
  fs::path tiny_wheel() const {
    return venvfix::testing::make_module_wheel("held", "1.0", m_dir->path());
  }
  fs::path marker() const { return m_dir->path() / "marker"; }
  std::string noted() const {
    std::ifstream in(marker());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // Waits (up to a minute) until the marker holds `what`.
  bool wait_for(const std::string& what) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (noted().find(what) == std::string::npos) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }
  // Waits (up to a minute) until a held interpreter of `script` is blocked reading its release
  // byte (/proc/PID/syscall: read on the fd the bootstrap was given), that is, until everything
  // it does while held is done. Its pid, or 0.
  static pid_t wait_until_held(const fs::path& script) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (std::chrono::steady_clock::now() < until) {
      for (const auto& proc : fs::directory_iterator("/proc")) {
        std::ifstream in(proc.path() / "cmdline", std::ios::binary);
        std::vector<std::string> argv;
        for (std::string arg; std::getline(in, arg, '\0');) argv.push_back(arg);
        // PYTHON -B -c BOOTSTRAP FD script SCRIPT ARGS…
        if (argv.size() < 7 || argv[1] != "-B" || argv[5] != "script" ||
            argv[6] != script.string()) {
          continue;
        }
        std::ifstream call(proc.path() / "syscall");
        long number = -1;
        std::string first;
        if (call >> number >> first && number == SYS_read &&
            std::stol(first, nullptr, 16) == std::stol(argv[4])) {
          return static_cast<pid_t>(std::stol(proc.path().filename().string()));
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return 0;
  }
  // The venv's lock, taken as venvfix takes it: while held here, no venvfix process can start
  // a snapshot of it.
  Fd hold_lock() const {
    fs::create_directories(m_venv / ".venvfix");
    Fd fd(::open((m_venv / ".venvfix/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    EXPECT_TRUE(fd.valid());
    EXPECT_EQ(::flock(fd.get(), LOCK_EX), 0);
    return fd;
  }
  std::size_t snapshots() const {
    const fs::path dir = m_venv / ".venvfix/snapshots";
    if (!fs::exists(dir)) return 0;
    return static_cast<std::size_t>(
        std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
  }

  std::optional<TempDir> m_dir;
  fs::path m_venv;
};

TEST_F(GuardHeld, APipScriptImportsWhileTheVenvIsLockedAndRunsOnlyAfterTheSnapshot) {
  const fs::path tool = console_script();
  Fd lock = hold_lock();
  auto run = guarded(tool, m_venv, {{"HELD_STATUS", "3"}});
  ASSERT_TRUE(wait_for("imported ")) << "the script's module was not imported while venvfix "
                                        "waited for the venv's lock";
  EXPECT_THAT(noted(), Not(HasSubstr("main "))) << "the script ran before venvfix's snapshot";
  EXPECT_EQ(snapshots(), 0U);
  lock = Fd();
  const CommandResult result = run.get();
  EXPECT_EQ(result.exit_code, 3) << "the script's exit status\n" << result.err;
  std::istringstream lines(noted());
  std::string imported, pid, main, main_pid, seen, args;
  lines >> imported >> pid >> main >> main_pid >> seen;
  std::getline(lines, args);
  EXPECT_EQ(imported, "imported");
  EXPECT_EQ(main, "main");
  EXPECT_EQ(main_pid, pid) << "imported by one process, run by another";
  EXPECT_EQ(seen, "1") << "the script ran before the guard's snapshot was there";
  EXPECT_EQ(args, " install --no-deps somewheel");
  EXPECT_THAT(noted(), HasSubstr("argv0 " + tool.string() + "\n"));
  // heldprobe was imported while held, heldlater after the release.
  std::vector<std::string> bytecode;
  const fs::path cache = m_dir->path() / "tool/__pycache__";
  for (const auto& entry : fs::directory_iterator(fs::exists(cache) ? cache : fs::path())) {
    bytecode.push_back(entry.path().filename().string().substr(0, 9));
  }
  EXPECT_EQ(bytecode, std::vector<std::string>{"heldlater"})
      << "the held interpreter wrote bytecode, or the released one none";
  EXPECT_EQ(snapshots(), 1U);
}

// The venv's own pip, as pip wrote its console script, `python -m pip`, and the shell hook's `pip`
// reaching the guard's wrapper are held, and install as they would alone.
TEST_F(GuardHeld, TheVenvsOwnPipIsHeldAndInstalls) {
  const fs::path wheel = tiny_wheel();
  const CommandResult installed = venvfix_cli(
      m_venv, {"-v", "-v", "guard", "exec", "--tool", "pip", "--", (m_venv / "bin/pip").string(),
               "install", "--no-deps", "--no-index", wheel.string()});
  EXPECT_EQ(installed.exit_code, 0) << installed.err;
  EXPECT_THAT(installed.err, HasSubstr("bin/pip` held")) << "pip's own script was not held";
  EXPECT_THAT(installed.out, HasSubstr("Successfully installed held-1.0"));
  auto venv = env::open_venv_at(m_venv);
  ASSERT_TRUE(venv);
  EXPECT_TRUE(fs::exists(venv->purelib / "held.py"));
  EXPECT_EQ(snapshots(), 1U);
  // `python -m pip`, as the shell hook passes it: python found in PATH, as execvp finds it.
  const char* path = std::getenv("PATH");
  const CommandResult again = venvfix_cli(
      m_venv,
      {"-v", "-v", "guard", "exec", "--tool", "pip", "--", "python", "-m", "pip", "install",
       "--no-deps", "--no-index", "--force-reinstall", wheel.string()},
      {{"PATH", (m_venv / "bin").string() + ":" + (path != nullptr ? path : "/usr/bin:/bin")}});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.err, HasSubstr("started `python` held")) << "python -m pip was not held";
  EXPECT_THAT(again.out, HasSubstr("Successfully installed held-1.0"));
  EXPECT_EQ(snapshots(), 2U);
  // The shell hook's `pip` in an activated venv whose guard is on: PATH finds the wrapper, and
  // the script held is the original the wrapper runs.
  ASSERT_EQ(venvfix_cli(m_venv, {"guard", "enable"}).exit_code, 0);
  const CommandResult hooked = venvfix_cli(
      m_venv,
      {"-v", "-v", "guard", "exec", "--tool", "pip", "--", "pip", "install", "--no-deps",
       "--no-index", "--force-reinstall", wheel.string()},
      {{"PATH", (m_venv / "bin").string() + ":" + (path != nullptr ? path : "/usr/bin:/bin")}});
  EXPECT_EQ(hooked.exit_code, 0) << hooked.err;
  EXPECT_THAT(hooked.err,
              HasSubstr("started `" + (m_venv / ".venvfix/guard/bin/pip").string() + "` held"));
  EXPECT_THAT(hooked.out, HasSubstr("Successfully installed held-1.0"));
  EXPECT_EQ(snapshots(), 3U);
}

// The real pip, held while the test keeps the venv locked, writes nothing while held: its
// imports done (it waits for its release byte), the venv is as it was, with pip's bytecode
// removed first so that an import that wrote any would show, and pip's cache is untouched.
// Released, it installs.
TEST_F(GuardHeld, TheRealPipWritesNothingWhileHeld) {
  const fs::path wheel = tiny_wheel();
  auto venv = env::open_venv_at(m_venv);
  ASSERT_TRUE(venv);
  std::vector<fs::path> caches;
  for (const auto& entry : fs::recursive_directory_iterator(venv->purelib / "pip")) {
    if (entry.path().filename() == "__pycache__") caches.push_back(entry.path());
  }
  std::size_t removed = 0;
  for (const fs::path& dir : caches) removed += fs::remove_all(dir);
  const txn::Fingerprint before = txn::testing::print_of(m_venv);
  const fs::path pip = m_venv / "bin/pip";
  const fs::path cache = m_dir->path() / "cache";
  Fd lock = hold_lock();
  auto run = std::async(std::launch::async, [&] {
    return venvfix_cli(m_venv,
                       {"guard", "exec", "--tool", "pip", "--", pip.string(), "install",
                        "--no-deps", "--no-index", wheel.string()},
                       {{"PYTHONDONTWRITEBYTECODE", ""}, {"XDG_CACHE_HOME", cache.string()}});
  });
  const pid_t held = wait_until_held(pip);
  EXPECT_NE(held, 0) << "pip was not seen waiting for its release";
  const txn::Fingerprint meanwhile = txn::testing::print_of(m_venv);
  EXPECT_EQ(txn::describe_difference(before, meanwhile), "")
      << "the held pip wrote into the venv (" << removed << " bytecode files removed before)";
  EXPECT_FALSE(fs::exists(cache)) << "the held pip wrote its cache";
  EXPECT_EQ(snapshots(), 0U);
  lock = Fd();
  const CommandResult result = run.get();
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("Successfully installed held-1.0"));
  EXPECT_TRUE(fs::exists(venv->purelib / "held.py"));
  EXPECT_EQ(snapshots(), 1U);
}

// A script with code of its own at the top level runs none of it before the release.
TEST_F(GuardHeld, AScriptWithCodeOutsideAMainBlockRunsNothingBeforeTheSnapshot) {
  const fs::path tool = script("import heldprobe\nimport sys\nsys.exit(heldprobe.main())\n");
  Fd lock = hold_lock();
  auto run = guarded(tool, m_venv);
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the interpreter starts in ~20 ms
  EXPECT_EQ(noted(), "") << "the script ran while venvfix waited for the lock";
  lock = Fd();
  const CommandResult result = run.get();
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(noted(), HasSubstr(" 1 install --no-deps somewheel"));
}

// Where venvfix stops before the command (here: no venv to open), the held script never runs,
// and its interpreter has ended when venvfix exits.
TEST_F(GuardHeld, WhenVenvfixStopsBeforeTheCommandTheScriptNeverRuns) {
  const fs::path tool = console_script();
  const CommandResult result = guarded(tool, m_dir->path() / "no-venv").get();
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("no-venv"));
  EXPECT_THAT(noted(), Not(HasSubstr("main ")));
  std::istringstream lines(noted());
  std::string imported;
  pid_t pid = 0;
  if (lines >> imported >> pid) {
    EXPECT_NE(::kill(pid, 0), 0) << "the held interpreter outlived venvfix";
  }
}

// A Ctrl-C while held ends the interpreter quietly; venvfix still snapshots, releases nothing
// and reports the command's status, 130.
TEST_F(GuardHeld, ASignalWhileHeldEndsTheCommandQuietlyBeforeItRuns) {
  const fs::path tool = console_script();
  Fd lock = hold_lock();
  auto run = guarded(tool, m_venv);
  ASSERT_TRUE(wait_for("imported "));
  std::istringstream lines(noted());
  std::string imported;
  pid_t pid = 0;
  ASSERT_TRUE(lines >> imported >> pid);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  lock = Fd();
  const CommandResult result = run.get();
  EXPECT_EQ(result.exit_code, 130) << result.err;
  EXPECT_THAT(result.err, Not(HasSubstr("Traceback")));
  EXPECT_THAT(noted(), Not(HasSubstr("main ")));
}

}  // namespace
}  // namespace venvfix::guard
