// Phases of apply_plan called one by one: the venv stamp and its re-check (what a pip or uv
// changes is seen, what Python and venvfix's own state change is not), the departing
// distributions, and the phase timer.
#include "venvfix/apply/phases.hpp"

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "txn/apply_test_support.hpp"
#include "venvfix/dist/inventory.hpp"

namespace venvfix::apply {
namespace {

using namespace venvfix::txn::testing;
using ::testing::HasSubstr;

class ApplyPhases : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-phases-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
    m_root = minimal_venv(m_dir->path() / "venv");
    auto venv = env::open_venv_at(m_root);
    ASSERT_TRUE(venv) << venv.error().message;
    m_venv.emplace(std::move(venv).value());
  }
  // A distribution as pip leaves it: a dist-info directory with METADATA and RECORD.
  void install_dist(const std::string& name, const std::string& version) {
    const fs::path info = m_venv->purelib / (name + "-" + version + ".dist-info");
    write_text(info / "METADATA",
               "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n");
    write_text(info / "RECORD", name + "-" + version + ".dist-info/METADATA,,\n" + name + "-" +
                                    version + ".dist-info/RECORD,,\n");
  }
  VenvStamp stamp() {
    auto stamped = stamp_venv(*m_venv);
    EXPECT_TRUE(stamped) << stamped.error().message;
    return stamped ? *stamped : VenvStamp{};
  }

  std::optional<TempDir> m_dir;
  fs::path m_root;
  std::optional<env::Venv> m_venv;
};

TEST_F(ApplyPhases, TheRecheckSeesWhatAnInstallerChangesAndNothingElse) {
  install_dist("alpha", "1.0");
  install_dist("beta", "2.0");
  const VenvStamp start = stamp();
  EXPECT_EQ(start.entries.size(), 2u);
  ASSERT_TRUE(recheck_venv(*m_venv, start));

  // What is no installer's doing: byte-code, venvfix's own state, a module file.
  write_text(m_venv->purelib / "__pycache__/x.cpython-312.pyc", "bytecode");
  write_text(m_root / ".venvfix/staging/x", "staged");
  write_text(m_venv->purelib / "alpha/__init__.py", "");
  EXPECT_TRUE(recheck_venv(*m_venv, start));

  // An install.
  install_dist("gamma", "3.0");
  Status added = recheck_venv(*m_venv, start);
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error().code, ExitCode::plan_stale);
  EXPECT_THAT(added.error().message, HasSubstr(m_root.string()));
  EXPECT_THAT(added.error().message, HasSubstr("added gamma-3.0.dist-info"));
  EXPECT_THAT(added.error().message, HasSubstr("nothing was moved"));
}

TEST_F(ApplyPhases, AReinstallAndAnUninstallChangeTheStamp) {
  install_dist("alpha", "1.0");
  install_dist("beta", "2.0");
  const VenvStamp start = stamp();
  // A reinstall of the same version: pip writes a new RECORD (a new inode).
  const fs::path record = m_venv->purelib / "alpha-1.0.dist-info/RECORD";
  auto text = read_file(record);
  ASSERT_TRUE(text);
  fs::remove(record);
  write_text(record, *text);
  EXPECT_EQ(describe_stamp_change(start, stamp()), "changed alpha-1.0.dist-info");
  // An uninstall.
  fs::remove_all(m_venv->purelib / "beta-2.0.dist-info");
  EXPECT_EQ(describe_stamp_change(start, stamp()),
            "changed alpha-1.0.dist-info, removed beta-2.0.dist-info");
  // Many changes: three named, the rest counted.
  for (const char* name : {"c", "d", "e", "f"}) install_dist(name, "1");
  EXPECT_THAT(describe_stamp_change(start, stamp()), HasSubstr(" and 3 more"));
  EXPECT_EQ(describe_stamp_change(start, start), "");
}

TEST_F(ApplyPhases, DepartingDistributionsAreTheRemovedAndTheReplaced) {
  install_dist("alpha", "1.0");
  install_dist("beta", "2.0");
  auto inventory = dist::read_inventory(*m_venv);
  ASSERT_TRUE(inventory) << inventory.error().message;
  plan::Plan plan;
  plan::Remove remove;
  remove.dist = "Alpha";
  remove.version = "1.0";
  plan.actions.push_back(remove);
  plan::Install install;
  install.dist = "beta";
  install.version = "2.1";
  plan.actions.push_back(install);
  plan::Install fresh = install;
  fresh.dist = "gamma";
  plan.actions.push_back(fresh);
  auto departures = departing_distributions(*m_venv, *inventory, plan);
  ASSERT_TRUE(departures) << departures.error().message;
  ASSERT_EQ(departures->replaced.size(), 3u);
  ASSERT_TRUE(departures->replaced[0] && departures->replaced[1]);
  EXPECT_EQ(inventory->distributions[*departures->replaced[0]].normalized_name, "alpha");
  EXPECT_EQ(inventory->distributions[*departures->replaced[1]].normalized_name, "beta");
  EXPECT_FALSE(departures->replaced[2]);
  EXPECT_EQ(departures->leaving.size(), 2u);
  EXPECT_EQ(departures->installed, (std::set<std::string>{"beta", "gamma"}));

  // Removing what is not installed: the plan is stale.
  std::get<plan::Remove>(plan.actions[0]).dist = "delta";
  auto stale = departing_distributions(*m_venv, *inventory, plan);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, ExitCode::plan_stale);
  EXPECT_THAT(stale.error().message, HasSubstr("delta"));
}

TEST(ApplyPhaseTimer, TimesEachPhaseIntoItsFieldAndTheTotal) {
  ApplyTimings timings;
  PhaseTimer timer(timings);
  int value = timer.time(&ApplyTimings::move_s, [] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return 42;
  });
  timer.finish();
  EXPECT_EQ(value, 42);
  EXPECT_GE(timings.move_s, 0.019);
  EXPECT_EQ(timings.check_s, 0);
  EXPECT_GE(timings.total_s, timings.move_s);
}

}  // namespace
}  // namespace venvfix::apply
