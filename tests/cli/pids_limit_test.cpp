// Where the system refuses new threads and processes (a container at its pids.max, a user at
// `ulimit -u`), end to end: venvfix runs inside a cgroup v1 `pids` group whose pids.max is 1,
// itself (support/pids_group.hpp), so the kernel refuses it every clone(). Threads are a
// speed-up, never a requirement (README): doctor answers as it does without the limit. What
// needs a process waits 2.55 s for a slot, then fails in one sentence naming what it could not
// run: apply's load check (exit 5, rolled back, the venv as before), run's command (exit 1, its
// snapshot not left behind) and a guarded pip. With three slots the apply succeeds. (The load
// check's own processes refused: LoadCheck.WhereTheHelperCanStartNoProcessToLoadInTheCheck…)
// Skipped, saying why, without root or the pids controller.
#include <cstdlib>
#include <map>
#include <variant>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/commands.hpp"
#include "support/pids_group.hpp"
#include "support/scratch_test.hpp"
#include "txn/apply_test_support.hpp"

namespace venvfix {
namespace {

using ::testing::HasSubstr;
using txn::testing::expect_tree_is;
using txn::testing::fingerprint;
using venvfix::testing::CommandResult;
using venvfix::testing::Hermetic;
using venvfix::testing::PidsGroup;

class PidsLimitCli : public venvfix::testing::ScratchTest {
 protected:
  PidsLimitCli() : ScratchTest("venvfix-pids-limit-") {}

  // venvfix with this test's index and cache, inside `group` when one is given. Not in the
  // hermetic view: its mount namespace is made by processes the group would refuse.
  CommandResult venvfix(const fs::path& venv, const std::vector<std::string>& args,
                        const PidsGroup* group = nullptr) {
    if (!m_index) {
      m_index.emplace(
          venvfix::testing::IndexServer::start(venvfix::testing::test_world().index_dir));
    }
    std::map<std::string, std::string> env;
    if (group != nullptr) {
      // LeakSanitizer's check at exit needs a thread of its own, which the group refuses: in a
      // sanitized build it would fail every run there. AddressSanitizer itself stays on.
      const char* asan = std::getenv("ASAN_OPTIONS");
      env["ASAN_OPTIONS"] = std::string(asan != nullptr ? asan : "") + ":detect_leaks=0";
    }
    return venvfix::testing::run_venvfix(
        {.index_url = m_index->url(),
         .cache_dir = path("cache"),
         .options = m_verbosity.empty() ? std::vector<std::string>{}
                                        : std::vector<std::string>{m_verbosity},
         .hermetic = Hermetic::no,
         .env = env,
         .launcher = group != nullptr ? group->launcher() : std::vector<std::string>{}},
        venv, args);
  }

  // The snapshots `venvfix snapshot list` shows, outside any group.
  std::size_t snapshot_count(const fs::path& venv) {
    CommandResult listed = venvfix(venv, {"--json", "snapshot", "list"});
    EXPECT_EQ(listed.exit_code, 0) << listed.err;
    return nlohmann::json::parse(listed.out)["snapshots"].size();
  }

  std::optional<venvfix::testing::IndexServer> m_index;
  std::string m_verbosity = "-q";  // empty: none given
};

TEST_F(PidsLimitCli, WhereNoThreadOrProcessCanStartVenvfixAnswersOrSaysWhatCouldNotRun) {
  auto made = PidsGroup::create(1);
  if (auto* reason = std::get_if<std::string>(&made)) GTEST_SKIP() << *reason;
  const PidsGroup& group = std::get<PidsGroup>(made);
  const fs::path venv = scenario("seed");
  const fs::path plan = path("plan.json");
  CommandResult planned = venvfix(venv, {"plan", "-o", plan.string()});
  ASSERT_EQ(planned.exit_code, 3) << planned.err;
  const auto before = fingerprint(venv);

  // The analysis's side work runs on the one thread: the same report, the same exit code.
  m_verbosity = "";  // warnings shown
  CommandResult free_doctor = venvfix(venv, {"--json", "doctor"});
  CommandResult limited_doctor = venvfix(venv, {"--json", "doctor"}, &group);
  m_verbosity = "-q";
  EXPECT_EQ(limited_doctor.exit_code, free_doctor.exit_code) << limited_doctor.err;
  EXPECT_EQ(free_doctor.exit_code, 3) << free_doctor.err;
  EXPECT_EQ(limited_doctor.out, free_doctor.out);
  // The loader could not be asked where it searches: said, not hidden.
  EXPECT_THAT(limited_doctor.err, HasSubstr("warning: cannot ask the loader "));
  EXPECT_THAT(limited_doctor.err, HasSubstr("(posix_spawn: Resource temporarily unavailable)"));

  // The wheels download once and stage without threads (each kept whole as it arrives, then
  // read as its archive); the load check cannot start.
  m_verbosity = "-vv";
  CommandResult applied = venvfix(venv, {"apply", plan.string(), "--snapshot"}, &group);
  m_verbosity = "-q";
  EXPECT_THAT(applied.err, HasSubstr("no thread to unpack it on; kept whole as it arrives"));
  EXPECT_THAT(applied.err, ::testing::Not(HasSubstr("reading it from the download cache")));
  EXPECT_EQ(applied.exit_code, 5) << applied.out << applied.err;
  EXPECT_THAT(applied.err, HasSubstr("venvfix: error: verification failed: cannot run "));
  EXPECT_THAT(applied.err, HasSubstr(": fork: Resource temporarily unavailable"));
  EXPECT_THAT(applied.err, HasSubstr("rolled back and the venv is unchanged"));
  EXPECT_THAT(applied.err, ::testing::Not(HasSubstr("a bug in venvfix")));
  expect_tree_is(venv, before);

  // The command cannot start: named, and the snapshot taken for it is not left behind.
  const std::size_t snapshots = snapshot_count(venv);
  CommandResult ran = venvfix(venv, {"run", "--", "true"}, &group);
  EXPECT_EQ(ran.exit_code, 1) << ran.out << ran.err;
  EXPECT_THAT(ran.err, HasSubstr("venvfix: error: cannot run true: fork: Resource temporarily "
                                 "unavailable"));
  EXPECT_EQ(snapshot_count(venv), snapshots);
  expect_tree_is(venv, before);

  // A guarded pip, whose interpreter venvfix starts early and holds on a thread of its own,
  // starts when its turn comes, and cannot either: the same sentence.
  const std::string python = (venv / "bin/python").string();
  CommandResult guarded = venvfix(
      venv, {"guard", "exec", "--tool", "pip", "--", python, "-m", "pip", "uninstall", "-y", "x"},
      &group);
  EXPECT_EQ(guarded.exit_code, 1) << guarded.out << guarded.err;
  EXPECT_THAT(guarded.err, HasSubstr("venvfix: error: cannot run " + python +
                                     ": fork: Resource temporarily unavailable"));
  expect_tree_is(venv, before);

  // With three slots (venvfix, its load-check helper, one process loading at a time, each
  // library then in a process of its own), the same plan applies and its probe passes.
  auto roomier = PidsGroup::create(3);
  ASSERT_TRUE(std::holds_alternative<PidsGroup>(roomier)) << std::get<std::string>(roomier);
  CommandResult three =
      venvfix(venv, {"--json", "apply", plan.string()}, &std::get<PidsGroup>(roomier));
  ASSERT_EQ(three.exit_code, 0) << three.out << three.err;
  const nlohmann::json report = nlohmann::json::parse(three.out);
  EXPECT_EQ(report["verification"]["ok"], true) << report.dump(2);
  EXPECT_FALSE(report["verification"]["loads"].empty()) << report.dump(2);
  EXPECT_EQ(report["verification"]["probe"]["ok"], true) << report.dump(2);
}

}  // namespace
}  // namespace venvfix
