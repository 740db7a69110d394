// Verification after the moves: dlopen in a child (real shared objects compiled here), the
// loader-rule verdict on the test world's scenarios, closure signatures, commands with a limit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <limits>
#include <sstream>
#include <thread>

#include "support/manifests.hpp"
#include "support/threads_refused.hpp"
#include "support/world.hpp"
#include "txn/apply_test_support.hpp"
#include "venvfix/apply/load_check.hpp"
#include "venvfix/apply/load_verdicts.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/elf/ld_cache.hpp"

namespace venvfix::apply {
namespace {

using namespace venvfix::txn::testing;
using ::testing::HasSubstr;

using venvfix::testing::CommandResult;
using venvfix::testing::manifests;
using venvfix::testing::run_command;

class LoadCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-load-check-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
    m_options.helper = venvfix::testing::venvfix_binary();
    m_options.timeout_seconds = 30;
  }
  fs::path path(const std::string& name) const { return m_dir->path() / name; }

  std::optional<TempDir> m_dir;
  LoadCheckOptions m_options;
};

TEST_F(LoadCheck, LoadsGoodLibrariesAndReportsTheMissingSoname) {
  compile_shared(path("good/libgood.so.1"), "libgood.so.1", "int good(void) { return 1; }\n");
  compile_with_missing_needed(path("bad/libbad.so.1"), "libbad.so.1", "libvenvfix_absent.so.7");
  std::vector<fs::path> files = {path("good/libgood.so.1"), path("bad/libbad.so.1")};
  auto results = dlopen_in_child(files, manifests(), m_options);
  ASSERT_TRUE(results) << results.error().message;
  ASSERT_EQ(results->size(), 2u);
  EXPECT_EQ((*results)[0].status, LoadStatus::loaded) << (*results)[0].message;
  EXPECT_TRUE((*results)[0].ok());
  EXPECT_EQ((*results)[1].status, LoadStatus::failed);
  EXPECT_FALSE((*results)[1].ok());
  EXPECT_THAT((*results)[1].message,
              HasSubstr("libvenvfix_absent.so.7: cannot open shared object file"));
}

// A process limit (a container's pids.max) that lets the helper start but leaves it no process
// to load in: the check fails, naming a file and the refusal, instead of saying the files did
// not load. One slot more and each loads, one process at a time.
TEST_F(LoadCheck, WhereTheHelperCanStartNoProcessToLoadInTheCheckFailsNotTheFiles) {
  compile_shared(path("one/libone.so.1"), "libone.so.1", "int one(void) { return 1; }\n");
  compile_shared(path("two/libtwo.so.1"), "libtwo.so.1", "int two(void) { return 2; }\n");
  const std::vector<fs::path> files = {path("one/libone.so.1"), path("two/libtwo.so.1")};
  // Each in a process of its own, as given: the helper asks the loader nothing.
  constexpr std::size_t own = std::numeric_limits<std::size_t>::max();
  const std::vector<std::size_t> alone = {own, own};
  venvfix::testing::ThreadsRefused limited;
  // This thread and the helper.
  if (const std::string why = limited.start(2); !why.empty()) GTEST_SKIP() << why;
  auto refused = dlopen_in_child(files, manifests(), m_options, alone);
  ASSERT_TRUE(limited.group().set_max(3));
  auto loaded = dlopen_in_child(files, manifests(), m_options, alone);
  ASSERT_FALSE(refused);
  EXPECT_THAT(
      refused.error().message,
      ::testing::ContainsRegex("^the load check \\(.*\\) could not load .*/lib(one|two)\\.so\\.1: "
                               "fork: Resource temporarily unavailable$"));
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->size(), 2u);
  for (const LoadResult& result : *loaded) {
    EXPECT_EQ(result.status, LoadStatus::loaded) << result.path << ": " << result.message;
  }
}

TEST_F(LoadCheck, TwoFilesLoadAtOnceAndAnswerInTheirOrder) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: one file at a time";
  // The first library's constructor waits for a file that only the second one's creates: it
  // loads only when both processes run at once, and otherwise aborts after 10 s.
  const std::string marker = path("marker").string();
  compile_shared(path("waits/libwaits.so"), "libwaits.so",
                 "#include <stdlib.h>\n#include <unistd.h>\n"
                 "__attribute__((constructor)) static void wait_for_marker(void) {\n"
                 "  for (int i = 0; i < 1000; ++i) {\n"
                 "    if (access(\"" +
                     marker +
                     "\", F_OK) == 0) return;\n"
                     "    usleep(10000);\n"
                     "  }\n"
                     "  abort();\n"
                     "}\n");
  compile_shared(path("marks/libmarks.so"), "libmarks.so",
                 "#include <fcntl.h>\n#include <unistd.h>\n"
                 "__attribute__((constructor)) static void make_marker(void) {\n"
                 "  close(open(\"" +
                     marker +
                     "\", O_CREAT | O_WRONLY, 0600));\n"
                     "}\n");
  compile_shared(path("good/libgood.so"), "libgood.so", "int good(void) { return 1; }\n");
  std::vector<fs::path> files = {path("waits/libwaits.so"), path("marks/libmarks.so"),
                                 path("good/libgood.so")};
  CommandResult helper = run_command({m_options.helper.string(), "__load-check", "--",
                                      files[0].string(), files[1].string(), files[2].string()});
  ASSERT_EQ(helper.exit_code, 0) << helper.err;
  std::vector<std::string> lines;
  std::istringstream out(helper.out);
  for (std::string line; std::getline(out, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u) << helper.out;
  for (std::size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(lines[i], "venvfix-load\tloaded\t" + files[i].string() + "\t") << i;
  }
}

TEST_F(LoadCheck, TheChildDoesNotSeeLdLibraryPath) {
  // libneeds needs libdep, which only LD_LIBRARY_PATH could find: the clean environment
  // drops it, so the load fails even though this process has it set.
  compile_shared(path("deps/libdep.so.1"), "libdep.so.1", "int dep(void) { return 1; }\n");
  compile_shared(path("lib/libneeds.so.1"), "libneeds.so.1", "int needs(void) { return 2; }\n",
                 {path("deps/libdep.so.1")});
  const char* old = std::getenv("LD_LIBRARY_PATH");
  std::string saved = old != nullptr ? old : "";
  ::setenv("LD_LIBRARY_PATH", path("deps").c_str(), 1);
  std::vector<fs::path> files = {path("lib/libneeds.so.1")};
  auto results = dlopen_in_child(files, manifests(), m_options);
  if (old != nullptr) {
    ::setenv("LD_LIBRARY_PATH", saved.c_str(), 1);
  } else {
    ::unsetenv("LD_LIBRARY_PATH");
  }
  ASSERT_TRUE(results) << results.error().message;
  EXPECT_EQ((*results)[0].status, LoadStatus::failed);
  EXPECT_THAT((*results)[0].message, HasSubstr("libdep.so.1"));

  // With the dependency preloaded (as torch's Python-side preload does), it loads.
  m_options.preload = {path("deps/libdep.so.1")};
  results = dlopen_in_child(files, manifests(), m_options);
  ASSERT_TRUE(results);
  EXPECT_EQ((*results)[0].status, LoadStatus::loaded) << (*results)[0].message;
}

TEST_F(LoadCheck, AMissingDriverLibraryIsAllowedAndSaid) {
  if (void* handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(handle);
    GTEST_SKIP() << "this host has a GPU driver";
  }
  compile_with_missing_needed(path("lib/libcaffe2_nvrtc.so"), "libcaffe2_nvrtc.so", "libcuda.so.1");
  std::vector<fs::path> files = {path("lib/libcaffe2_nvrtc.so")};
  auto results = dlopen_in_child(files, manifests(), m_options);
  ASSERT_TRUE(results);
  EXPECT_EQ((*results)[0].status, LoadStatus::driver_missing);
  EXPECT_TRUE((*results)[0].ok());
  EXPECT_THAT((*results)[0].message, HasSubstr("libcuda.so.1"));
  EXPECT_THAT((*results)[0].message, HasSubstr("GPU driver"));
}

TEST_F(LoadCheck, PythonExtensionsAreNotFailuresButCrashesAndHangsAre) {
  compile_shared(path("ext/_ext.so"), "_ext.so",
                 "extern int PyExc_VenvfixTest; int f(void) { return PyExc_VenvfixTest; }\n");
  compile_shared(path("crash/libcrash.so"), "libcrash.so",
                 "#include <signal.h>\n"
                 "__attribute__((constructor)) static void boom(void) { raise(SIGSEGV); }\n");
  compile_shared(path("good/libgood.so"), "libgood.so", "int good(void) { return 1; }\n");
  std::vector<fs::path> files = {path("ext/_ext.so"), path("crash/libcrash.so"),
                                 path("good/libgood.so")};
  auto results = dlopen_in_child(files, manifests(), m_options);
  ASSERT_TRUE(results) << results.error().message;
  EXPECT_EQ((*results)[0].status, LoadStatus::needs_python) << (*results)[0].message;
  EXPECT_TRUE((*results)[0].ok());
  EXPECT_EQ((*results)[1].status, LoadStatus::crashed);
  EXPECT_THAT((*results)[1].message, HasSubstr("signal 11"));
  // One crash does not take the others with it: each library loads in its own process.
  EXPECT_EQ((*results)[2].status, LoadStatus::loaded);

  compile_shared(path("hang/libhang.so"), "libhang.so",
                 "#include <unistd.h>\n"
                 "__attribute__((constructor)) static void wait(void) { sleep(60); }\n");
  files = {path("good/libgood.so"), path("hang/libhang.so")};
  m_options.timeout_seconds = 2;
  auto start = std::chrono::steady_clock::now();
  results = dlopen_in_child(files, manifests(), m_options);
  ASSERT_TRUE(results) << results.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ((*results)[0].status, LoadStatus::loaded);
  EXPECT_EQ((*results)[1].status, LoadStatus::timed_out);
  EXPECT_FALSE((*results)[1].ok());
}

// What the logging constructors wrote.
std::string constructors_run(const std::string& log) {
  auto text = read_file(log);
  return text ? *text : std::string("<unreadable>");
}

// A constructor that appends `tag` and a newline to the file `log`.
std::string logging_constructor(const std::string& log, const std::string& tag) {
  return "#include <fcntl.h>\n#include <unistd.h>\n"
         "__attribute__((constructor)) static void log_load(void) {\n"
         "  int fd = open(\"" +
         log + "\", O_WRONLY | O_APPEND | O_CREAT, 0600);\n  write(fd, \"" + tag + "\\n\", " +
         std::to_string(tag.size() + 1) + ");\n  close(fd);\n}\n";
}

// libbase, libmid (needs base) and libtop (needs mid) under `root`, each logging its
// constructor to `log`.
void build_base_mid_top(const fs::path& root, const std::string& log) {
  const auto path = [&root](const std::string& name) { return root / name; };
  compile_shared(path("base/libbase.so.1"), "libbase.so.1",
                 logging_constructor(log, "base") + "int base_fn(void) { return 1; }\n");
  compile_shared(path("mid/libmid.so.1"), "libmid.so.1",
                 logging_constructor(log, "mid") +
                     "int base_fn(void);\nint mid_fn(void) { return base_fn(); }\n",
                 {path("base/libbase.so.1")}, "-Wl,-rpath," + path("base").string());
  compile_shared(path("top/libtop.so.1"), "libtop.so.1",
                 logging_constructor(log, "top") +
                     "int mid_fn(void);\nint top_fn(void) { return mid_fn(); }\n",
                 {path("mid/libmid.so.1")},
                 "-Wl,-rpath," + path("mid").string() + ":" + path("base").string());
}

// Two libshared.so.1 under `root`: listed/'s defines shared_fn, other/'s does not;
// user/libuser.so.1 was linked against the listed one, but its RUNPATH finds the other.
void build_listed_copy_and_user(const fs::path& root) {
  compile_shared(root / "listed/libshared.so.1", "libshared.so.1",
                 "int shared_fn(void) { return 1; }\n");
  compile_shared(root / "other/libshared.so.1", "libshared.so.1",
                 "int other_fn(void) { return 2; }\n");
  compile_shared(root / "user/libuser.so.1", "libuser.so.1",
                 "int shared_fn(void);\nint user_fn(void) { return shared_fn(); }\n",
                 {root / "listed/libshared.so.1"}, "-Wl,-rpath," + (root / "other").string());
}

// The lines the logging constructors wrote, sorted: processes that run at once write in any order.
std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  for (std::string_view line : split(text, '\n')) {
    if (!line.empty()) lines.emplace_back(line);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

TEST_F(LoadCheck, AFileLoadsInTheProcessOfWhatItLoadsSoConstructorsRunOnce) {
  // top needs mid, mid needs base (each found through its RUNPATH): base's constructor, as
  // cuBLAS's libcublasLt's, runs once for the three, not once per file.
  const std::string log = path("constructors.log").string();
  build_base_mid_top(m_dir->path(), log);
  std::vector<fs::path> files = {path("top/libtop.so.1"), path("base/libbase.so.1"),
                                 path("mid/libmid.so.1")};
  auto results = dlopen_in_child(files, manifests(), m_options);
  ASSERT_TRUE(results) << results.error().message;
  for (const LoadResult& result : *results) {
    EXPECT_EQ(result.status, LoadStatus::loaded) << result.path << ": " << result.message;
  }
  EXPECT_EQ(constructors_run(log), "base\nmid\ntop\n");
}

TEST_F(LoadCheck, TheHelperLoadsEachFileWhereTheBasesItIsGivenSay) {
  // The parent may pass the chain it read from the loader's listings (apply/load_verdicts.cpp):
  // the helper then follows it instead of asking the loader again.
  const std::string log = path("constructors.log").string();
  build_base_mid_top(m_dir->path(), log);
  const std::vector<fs::path> files = {path("top/libtop.so.1"), path("base/libbase.so.1"),
                                       path("mid/libmid.so.1")};
  constexpr std::size_t own = std::numeric_limits<std::size_t>::max();
  const std::vector<std::size_t> chained = {2, own, 1};
  auto results = dlopen_in_child(files, manifests(), m_options, chained);
  ASSERT_TRUE(results) << results.error().message;
  for (const LoadResult& result : *results) EXPECT_TRUE(result.ok()) << result.message;
  EXPECT_EQ(constructors_run(log), "base\nmid\ntop\n");

  // Every file in a process of its own, as told: base's constructor runs in each of the three.
  fs::remove(log);
  const std::vector<std::size_t> alone = {own, own, own};
  results = dlopen_in_child(files, manifests(), m_options, alone);
  ASSERT_TRUE(results) << results.error().message;
  for (const LoadResult& result : *results) EXPECT_TRUE(result.ok()) << result.message;
  std::vector<std::string> lines = sorted_lines(constructors_run(log));
  EXPECT_EQ(lines, (std::vector<std::string>{"base", "base", "base", "mid", "mid", "top"}));

  // Bases that name no other file (itself, past the end) are processes of their own; a list
  // that is not one per file is not used (the helper chooses: the chain again).
  fs::remove(log);
  const std::vector<std::size_t> odd = {0, 7, own};
  results = dlopen_in_child(files, manifests(), m_options, odd);
  ASSERT_TRUE(results) << results.error().message;
  lines = sorted_lines(constructors_run(log));
  EXPECT_EQ(lines.size(), 6u);
  fs::remove(log);
  const std::vector<std::size_t> short_list = {own};
  results = dlopen_in_child(files, manifests(), m_options, short_list);
  ASSERT_TRUE(results) << results.error().message;
  EXPECT_EQ(constructors_run(log), "base\nmid\ntop\n");
}

TEST_F(LoadCheck, KeptVerdictsChainTheLoadsFromTheListingsTheirKeysMade) {
  // With kept verdicts the keys' listings (the loader's trace mode) give the chain: constructors
  // run once for the three, and a file whose own search finds another copy of a listed file
  // still loads on its own (and fails, as it would in its own process).
  const std::string log = path("constructors.log").string();
  build_base_mid_top(m_dir->path(), log);
  build_listed_copy_and_user(m_dir->path());
  const std::vector<fs::path> files = {path("top/libtop.so.1"), path("listed/libshared.so.1"),
                                       path("base/libbase.so.1"), path("user/libuser.so.1"),
                                       path("mid/libmid.so.1")};
  LoadVerdictOptions verdicts;
  verdicts.dir = path("verdicts");
  auto results = dlopen_keeping_verdicts(files, manifests(), m_options, verdicts);
  ASSERT_TRUE(results) << results.error().message;
  EXPECT_EQ(constructors_run(log), "base\nmid\ntop\n");
  for (std::size_t i : {0u, 1u, 2u, 4u}) {
    EXPECT_EQ((*results)[i].status, LoadStatus::loaded) << (*results)[i].message;
  }
  EXPECT_EQ((*results)[3].status, LoadStatus::failed);
  EXPECT_THAT((*results)[3].message, HasSubstr("undefined symbol: shared_fn"));
}

TEST_F(LoadCheck, AFileWhoseOwnSearchFindsAnotherCopyLoadsOnItsOwn) {
  // Loaded after the listed copy of libshared, user would bind to it and load; on its own (its
  // RUNPATH finds the other copy) it must fail.
  build_listed_copy_and_user(m_dir->path());
  std::vector<fs::path> files = {path("listed/libshared.so.1"), path("user/libuser.so.1")};
  auto results = dlopen_in_child(files, manifests(), m_options);
  ASSERT_TRUE(results) << results.error().message;
  EXPECT_EQ((*results)[0].status, LoadStatus::loaded) << (*results)[0].message;
  EXPECT_EQ((*results)[1].status, LoadStatus::failed);
  EXPECT_THAT((*results)[1].message, HasSubstr("undefined symbol: shared_fn"));
}

TEST_F(LoadCheck, ACrashOrFailureInAChainIsTheFilesOwnAnswer) {
  // base loads; crashes (needs base) dies in its constructor; after (needs base) still loads,
  // in a process forked from base's again.
  const std::string log = path("constructors.log").string();
  compile_shared(path("base/libbase.so.1"), "libbase.so.1", logging_constructor(log, "base"));
  compile_shared(path("crashes/libcrashes.so.1"), "libcrashes.so.1",
                 "#include <signal.h>\n"
                 "__attribute__((constructor)) static void boom(void) { raise(SIGSEGV); }\n",
                 {path("base/libbase.so.1")}, "-Wl,-rpath," + path("base").string());
  compile_shared(path("after/libafter.so.1"), "libafter.so.1", logging_constructor(log, "after"),
                 {path("base/libbase.so.1")}, "-Wl,-rpath," + path("base").string());
  // A base that maps but does not relocate (a symbol nothing defines): it and what needs it
  // fail, each with the loader's own message.
  compile_shared(
      path("unbound/libunbound.so.1"), "libunbound.so.1",
      "int venvfix_nowhere(void);\nint unbound_fn(void) { return venvfix_nowhere(); }\n");
  compile_shared(path("needs/libneeds.so.1"), "libneeds.so.1", "int needs_fn(void) { return 3; }\n",
                 {path("unbound/libunbound.so.1")}, "-Wl,-rpath," + path("unbound").string());
  std::vector<fs::path> files = {path("base/libbase.so.1"), path("crashes/libcrashes.so.1"),
                                 path("after/libafter.so.1"), path("unbound/libunbound.so.1"),
                                 path("needs/libneeds.so.1")};
  auto results = dlopen_in_child(files, manifests(), m_options);
  ASSERT_TRUE(results) << results.error().message;
  EXPECT_EQ((*results)[0].status, LoadStatus::loaded) << (*results)[0].message;
  EXPECT_EQ((*results)[1].status, LoadStatus::crashed);
  EXPECT_THAT((*results)[1].message, HasSubstr("signal 11"));
  EXPECT_EQ((*results)[2].status, LoadStatus::loaded) << (*results)[2].message;
  EXPECT_EQ(constructors_run(log), "base\nafter\n");
  EXPECT_EQ((*results)[3].status, LoadStatus::failed);
  EXPECT_THAT((*results)[3].message, HasSubstr("undefined symbol: venvfix_nowhere"));
  EXPECT_EQ((*results)[4].status, LoadStatus::failed);
  EXPECT_THAT((*results)[4].message, HasSubstr("undefined symbol: venvfix_nowhere"));
}

TEST_F(LoadCheck, CommandsRunWithALimit) {
  auto ok = run_with_timeout({"sh", "-c", "echo out; echo err >&2; exit 3"}, std::nullopt, 10);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->exit_code, 3);
  EXPECT_FALSE(ok->timed_out);
  EXPECT_THAT(ok->output, HasSubstr("out"));
  EXPECT_THAT(ok->output, HasSubstr("err"));

  auto slow = run_with_timeout({"sh", "-c", "sleep 30 & sleep 30"}, std::nullopt, 1);
  ASSERT_TRUE(slow);
  EXPECT_TRUE(slow->timed_out);
  EXPECT_EQ(slow->exit_code, 128 + 9);

  auto missing = run_with_timeout({"/nonexistent/venvfix-no-such-command"}, std::nullopt, 10);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->exit_code, 127);

  std::vector<std::string> env = {"VENVFIX_TEST_VALUE=42", "PATH=/usr/bin:/bin"};
  auto with_env = run_with_timeout({"sh", "-c", "echo v=$VENVFIX_TEST_VALUE"}, env, 10);
  ASSERT_TRUE(with_env);
  EXPECT_THAT(with_env->output, HasSubstr("v=42"));
}

// The loader-rule verdict on real scenarios, in the hermetic view (no host CUDA).
class LoadCheckWorld : public LoadCheck {
 protected:
  verify::Analysis analyze(const fs::path& venv_root) {
    auto venv = env::open_venv_at(venv_root);
    EXPECT_TRUE(venv);
    elf::SystemView system = hermetic_view();
    auto analysis = verify::analyze(*venv, manifests(), system, {});
    EXPECT_TRUE(analysis) << analysis.error().message;
    return std::move(analysis).value();
  }
  static elf::SystemView hermetic_view() {
    auto system = elf::SystemView::host(elf::UseLdLibraryPath::no);
    EXPECT_TRUE(system);
    auto cache = elf::LdCache::load(venvfix::testing::test_world().hermetic_cache);
    EXPECT_TRUE(cache);
    system->cache = std::move(cache).value();
    return std::move(system).value();
  }
};

TEST_F(LoadCheckWorld, TheSeedFailsUnlessThePlanSaysItCannotFixIt) {
  verify::Analysis seed = analyze(venvfix::testing::make_scenario("seed", m_dir->path()));
  plan::Plan plan;
  TargetVerdict verdict = judge_targets(seed, plan, {});
  ASSERT_FALSE(verdict.ok());
  std::vector<std::string> kinds;
  for (const verify::Finding& f : verdict.failures) {
    kinds.push_back(std::string(verify::to_string(f.kind())) + " " +
                    std::string(verify::soname_of(f)));
  }
  EXPECT_THAT(kinds, ::testing::Contains("unresolved-soname libcudnn.so.9"));
  // The ghost distribution fails only when the transaction installed or answered it.
  bool ghost_failed = false;
  for (const verify::Finding& f : verdict.failures) {
    ghost_failed |= f.kind() == verify::FindingKind::ghost_files;
  }
  EXPECT_FALSE(ghost_failed);
  verdict = judge_targets(seed, plan, {"nvidia-cudnn-cu12"});
  ghost_failed = false;
  for (const verify::Finding& f : verdict.failures) {
    ghost_failed |= f.kind() == verify::FindingKind::ghost_files && f.dist == "nvidia-cudnn-cu12";
  }
  EXPECT_TRUE(ghost_failed);

  verify::Finding unresolved_soname;
  unresolved_soname.detail = verify::UnresolvedSoname{"libcudnn.so.9", {}, {}, {}, {}};
  plan.unresolved.push_back(unresolved_soname);
  verify::Finding ghost;
  ghost.dist = "nvidia-cudnn-cu12";
  plan.unresolved.push_back(ghost);  // a ghost-files finding
  verdict = judge_targets(seed, plan, {"nvidia-cudnn-cu12"});
  EXPECT_TRUE(verdict.ok()) << verdict.failures.front().message;
  EXPECT_FALSE(verdict.remaining.empty());

  verify::Analysis healthy = analyze(venvfix::testing::make_scenario("healthy", m_dir->path()));
  EXPECT_TRUE(judge_targets(healthy, plan::Plan{}, {"nvidia-cudnn-cu12"}).ok());
}

TEST_F(LoadCheckWorld, ClosureSignaturesChangeExactlyWhereALibraryWasReplaced) {
  fs::path venv_root = venvfix::testing::make_scenario("healthy", m_dir->path());
  verify::Analysis before = analyze(venv_root);
  elf::SystemView system = hermetic_view();
  auto first = closure_signatures(before, system);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(closure_signatures(before, system), first);  // deterministic

  // Replacing a file no closure holds changes nothing.
  auto replace = [](const fs::path& file) {
    fs::copy_file(file, file.string() + ".new");
    fs::rename(file.string() + ".new", file);
  };
  replace(before.venv.purelib / "torch/version.py");
  EXPECT_EQ(closure_signatures(analyze(venv_root), system), first);

  // Replace cuDNN by a copy (a new inode, as a transaction's rename gives): every closure that
  // holds it changes, the others do not.
  fs::path cudnn = before.venv.purelib / "nvidia/cudnn/lib/libcudnn.so.9";
  replace(cudnn);
  auto second = closure_signatures(analyze(venv_root), system);
  ASSERT_EQ(second.size(), first.size());
  std::size_t changed = 0;
  for (const auto& [root, signature] : second) {
    bool holds = first[root].find("libcudnn.so.9 ") != std::string::npos;
    EXPECT_EQ(first[root] != signature, holds) << root;
    changed += first[root] != signature ? 1 : 0;
  }
  EXPECT_GT(changed, 0u);
}

}  // namespace
}  // namespace venvfix::apply
