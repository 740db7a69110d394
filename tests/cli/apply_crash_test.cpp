// The crash matrix through the real commands: `venvfix apply` (the seed repaired from the
// loopback index) and `venvfix uninstall` stopped before each mkdir, rename or unlink N of
// their transaction (a crash-point build: VENVFIX_CRASH_AT=N, VENVFIX_CRASH_OPS make the
// binary's StepFs a FaultStepFs that stops there; every write is a crash point in the
// library-level tests/txn/crash_matrix_test.cpp), then `venvfix recover`. Every crash that leaves a
// journal leaves a venv that refuses other commands until `recover`, and `recover` brings it to
// exactly the state before the command or exactly the state after it: never a mix, and never before
// again once a crash recovered to after.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/commands.hpp"
#include "support/scratch_test.hpp"
#include "support/world.hpp"
#include "txn/apply_test_support.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/txn/step_fs.hpp"

namespace venvfix {
namespace {

using Print = std::map<std::string, std::string>;
using venvfix::testing::CommandResult;

class CrashMatrixCli : public venvfix::testing::ScratchTest {
 protected:
  CrashMatrixCli() : ScratchTest("venvfix-crash-cli-") {}
  void SetUp() override {
    if (!txn::crash_points_compiled()) GTEST_SKIP() << "built without -DVENVFIX_CRASH_POINTS=ON";
    ScratchTest::SetUp();
    m_index.emplace(venvfix::testing::IndexServer::start(venvfix::testing::test_world().index_dir));
  }

  CommandResult venvfix(const fs::path& venv, const std::vector<std::string>& args,
                        std::optional<long> crash_at = std::nullopt) {
    venvfix::testing::VenvfixCli cli{.index_url = m_index->url(),
                                     .cache_dir = path("cache"),
                                     .options = {"-q"},
                                     .hermetic = venvfix::testing::Hermetic::no};
    if (crash_at) {
      cli.env["VENVFIX_CRASH_AT"] = std::to_string(*crash_at);
      cli.env["VENVFIX_CRASH_OPS"] = "make_dir,rename,remove";  // about one crash point per step
    }
    return venvfix::testing::run_venvfix(cli, venv, args);
  }

  struct Counts {
    int crashed = 0;
    int before = 0;
    int after = 0;
    int journaled = 0;  // crashes that left a journal (and a venv that refuses other commands)
  };

  // Runs `args` on fresh copies of `scenario`, crashing at event 0, 1, 2, … until the command
  // completes; after each crash checks the refusal and recover's outcome.
  Counts run_matrix(const std::string& scenario, const std::vector<std::string>& args,
                    int expected_exit) {
    Counts counts;
    std::optional<Print> before;
    std::vector<std::pair<long, Print>> recovered;
    std::optional<Print> after;
    for (long n = 0; n < 400 && !after; ++n) {
      fs::path venv = venvfix::testing::make_scenario(scenario, m_dir->path() / "venvs");
      Print start = txn::testing::fingerprint(venv);
      if (!before) before = start;
      EXPECT_EQ(start, *before) << "scenario copies differ";
      CommandResult run = venvfix(venv, args, n);
      if (run.exit_code == expected_exit) {
        after = txn::testing::fingerprint(venv);
      } else {
        EXPECT_EQ(run.exit_code, txn::k_crash_exit_code) << "event " << n << ": " << run.err;
        ++counts.crashed;
        // Before journal.json exists, or after it is removed, there is nothing to refuse for.
        bool journaled = fs::exists(venv / ".venvfix/journal/journal.json");
        counts.journaled += journaled ? 1 : 0;
        CommandResult blocked = venvfix(venv, {"doctor"});
        EXPECT_EQ(blocked.exit_code == 6, journaled) << "event " << n << ": " << blocked.err;
        CommandResult recover = venvfix(venv, {"recover"});
        EXPECT_EQ(recover.exit_code, 0) << "event " << n << ": " << recover.err;
        recovered.emplace_back(n, txn::testing::fingerprint(venv));
      }
      std::error_code ec;
      fs::remove_all(venv, ec);
    }
    EXPECT_TRUE(after) << "the command never completed";
    if (!after || !before) return counts;
    EXPECT_NE(*before, *after) << "the command changed nothing";
    for (const auto& [n, print] : recovered) {
      if (print == *before) {
        EXPECT_EQ(counts.after, 0)
            << "a crash before write " << n << " recovered to before after an earlier one to after";
        ++counts.before;
      } else if (print == *after) {
        ++counts.after;
      } else {
        ADD_FAILURE() << "a crash after event " << n << " was recovered to a mix: "
                      << ::testing::PrintToString(txn::testing::fingerprint_diff(*before, print));
      }
    }
    return counts;
  }

  // Prints the matrix of `command` and checks that its crashes left journals and recovered both
  // ways.
  static void expect_both_outcomes(const char* command, const Counts& counts) {
    std::printf(
        "%s crash matrix: %d crash points (%d left a journal), %d recovered to before, %d "
        "to after\n",
        command, counts.crashed, counts.journaled, counts.before, counts.after);
    EXPECT_GT(counts.journaled, 5);
    EXPECT_GT(counts.before, 0);
    EXPECT_GT(counts.after, 0);
  }

  std::optional<venvfix::testing::IndexServer> m_index;
};

TEST_F(CrashMatrixCli, ApplyRecoversToBeforeOrAfterAtEveryEvent) {
  expect_both_outcomes("apply", run_matrix("seed", {"apply", "--yes"}, 0));
}

TEST_F(CrashMatrixCli, UninstallRecoversToBeforeOrAfterAtEveryEvent) {
  // nvidia-cublas (CUDA 13) is the seed's leftover that nothing loads: a removal that goes through.
  expect_both_outcomes("uninstall", run_matrix("seed", {"uninstall", "nvidia-cublas"}, 0));
}

}  // namespace
}  // namespace venvfix
