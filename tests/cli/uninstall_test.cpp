// `venvfix uninstall` end to end: a harmless removal goes through like pip's; one that would
// break torch is refused with the soname, the consumer and the distribution, unless --repair
// (the reinstall joins the transaction) or --force.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/commands.hpp"
#include "support/scratch_test.hpp"
#include "txn/apply_test_support.hpp"

namespace venvfix {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using txn::testing::expect_tree_is;
using txn::testing::fingerprint;
using venvfix::testing::CommandResult;
using venvfix::testing::import_torch;
using venvfix::testing::run_pip;

class UninstallCli : public venvfix::testing::ScratchTest {
 protected:
  UninstallCli() : ScratchTest("venvfix-uninstall-cli-") {}
  void SetUp() override {
    ScratchTest::SetUp();
    m_index.emplace(venvfix::testing::IndexServer::start(venvfix::testing::test_world().index_dir));
  }

  CommandResult venvfix(const fs::path& venv, const std::vector<std::string>& args,
                        const std::string& index_url = {}) {
    return venvfix::testing::run_venvfix(
        {.index_url = index_url.empty() ? m_index->url() : index_url,
         .cache_dir = path("cache"),
         .options = {"-q"}},
        venv, args);
  }
  std::optional<venvfix::testing::IndexServer> m_index;
};

TEST_F(UninstallCli, AHarmlessRemovalGoesThroughLikePips) {
  fs::path venv = scenario("seed");
  // nvidia-cublas 13 is the seed's leftover: nothing loads it.
  CommandResult removed = venvfix(venv, {"--json", "uninstall", "nvidia-cublas"});
  ASSERT_EQ(removed.exit_code, 0) << removed.out << removed.err;
  json report = json::parse(removed.out);
  EXPECT_EQ(report["schema"], "venvfix-apply/1");
  EXPECT_EQ(report["command"], "uninstall");
  ASSERT_EQ(report["actions"].size(), 1u);
  EXPECT_GT(report["actions"][0]["files_removed"].get<int>(), 0);
  CommandResult list = run_pip(venv, {"list"});
  EXPECT_THAT(list.out, ::testing::Not(HasSubstr("nvidia-cublas ")));
  for (const auto& [rel, value] : fingerprint(venv)) {
    EXPECT_EQ(rel.find("nvidia/cu13/lib/libcublas"), std::string::npos) << rel;
  }
}

TEST_F(UninstallCli, RefusesToBreakTorchUnlessForced) {
  fs::path venv = scenario("healthy");
  const auto before = fingerprint(venv);
  CommandResult refused = venvfix(venv, {"uninstall", "nvidia-cudnn-cu12"});
  EXPECT_EQ(refused.exit_code, 3) << refused.out << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("libcudnn.so.9"));
  EXPECT_THAT(refused.err, HasSubstr("torch"));
  EXPECT_THAT(refused.err, HasSubstr("--force"));
  EXPECT_THAT(refused.err, HasSubstr("unchanged"));
  expect_tree_is(venv, before);

  CommandResult forced = venvfix(venv, {"uninstall", "nvidia-cudnn-cu12", "--force"});
  EXPECT_EQ(forced.exit_code, 0) << forced.out << forced.err;
  EXPECT_THAT(run_pip(venv, {"list"}).out, ::testing::Not(HasSubstr("nvidia-cudnn-cu12")));
  if (venvfix::testing::hermetic_available()) {
    CommandResult imported = import_torch(venv);
    EXPECT_NE(imported.exit_code, 0);
    EXPECT_THAT(imported.err, HasSubstr("libcudnn.so.9"));
  }
}

TEST_F(UninstallCli, RepairPutsBackWhatTheOtherBuildOverwrote) {
  // healthy + `pip install nvidia-cudnn-cu13`: cu13's files now sit in cu12's paths. Removing
  // cu13 would leave cu12 holding cu13's bytes (and, as pip does it, no files at all).
  fs::path venv = scenario("healthy");
  CommandResult installed =
      run_pip(venv, {"install", "--index-url", m_index->url(), "nvidia-cudnn-cu13==9.13.0.50"});
  ASSERT_EQ(installed.exit_code, 0) << installed.err;
  const auto before = fingerprint(venv);
  CommandResult refused = venvfix(venv, {"uninstall", "nvidia-cudnn-cu13"});
  EXPECT_EQ(refused.exit_code, 3) << refused.out << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("nvidia-cudnn-cu12"));
  EXPECT_THAT(refused.err, HasSubstr("--repair"));
  EXPECT_EQ(fingerprint(venv), before);

  CommandResult repaired =
      venvfix(venv, {"--json", "uninstall", "nvidia-cudnn-cu13", "--repair", "--snapshot"});
  ASSERT_EQ(repaired.exit_code, 0) << repaired.out << repaired.err;
  json report = json::parse(repaired.out);
  EXPECT_EQ(report["verification"]["ok"], true);
  EXPECT_TRUE(report["snapshot"].is_string());
  EXPECT_THAT(run_pip(venv, {"list"}).out, ::testing::Not(HasSubstr("nvidia-cudnn-cu13")));
  CommandResult check = run_pip(venv, {"check"});
  EXPECT_EQ(check.exit_code, 0) << check.out;
  if (venvfix::testing::hermetic_available()) {
    CommandResult imported = import_torch(venv);
    EXPECT_EQ(imported.exit_code, 0) << imported.err;
  }
}

// The repair's load check keeps its verdicts as apply's does; --recheck-loads loads again.
TEST_F(UninstallCli, ARepairKeepsItsLoadVerdictsUnlessToldToRecheck) {
  fs::path venv = scenario("healthy");
  auto repair = [&](std::vector<std::string> extra) {
    CommandResult installed =
        run_pip(venv, {"install", "--force-reinstall", "--no-deps", "--index-url", m_index->url(),
                       "nvidia-cudnn-cu13==9.13.0.50"});
    EXPECT_EQ(installed.exit_code, 0) << installed.err;
    std::vector<std::string> args = {"--json", "uninstall", "nvidia-cudnn-cu13", "--repair"};
    args.insert(args.end(), extra.begin(), extra.end());
    CommandResult repaired = venvfix(venv, args);
    EXPECT_EQ(repaired.exit_code, 0) << repaired.out << repaired.err;
    std::size_t loads = 0;
    std::size_t proven_earlier = 0;
    if (repaired.exit_code != 0) return std::pair{loads, proven_earlier};
    const json report = json::parse(repaired.out);
    for (const json& load : report["verification"]["loads"]) {
      ++loads;
      proven_earlier += load.contains("proven_at") ? 1 : 0;
    }
    return std::pair{loads, proven_earlier};
  };
  const auto [first_loads, first_kept] = repair({});
  ASSERT_GT(first_loads, 0u);
  EXPECT_EQ(first_kept, 0u);
  EXPECT_GT(repair({}).second, 0u);
  EXPECT_EQ(repair({"--recheck-loads"}).second, 0u);
}

// The refusal needs no index: with one that cannot be reached, a removal that would break torch
// is still refused with exit 3 naming the soname (not exit 4); only --repair reads the index.
TEST_F(UninstallCli, RefusesWithoutTheIndex) {
  fs::path venv = scenario("healthy");
  const auto before = fingerprint(venv);
  const std::string unreachable = "http://127.0.0.1:9/simple";  // the discard port: refused
  CommandResult refused = venvfix(venv, {"uninstall", "nvidia-cudnn-cu12"}, unreachable);
  EXPECT_EQ(refused.exit_code, 3) << refused.out << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("libcudnn.so.9"));
  EXPECT_THAT(refused.err, HasSubstr("unchanged"));
  CommandResult offline =
      venvfix(venv, {"--offline", "--json", "uninstall", "nvidia-cudnn-cu12"}, unreachable);
  EXPECT_EQ(offline.exit_code, 3) << offline.out << offline.err;
  json error = json::parse(offline.out, nullptr, false);
  ASSERT_FALSE(error.is_discarded()) << offline.out;
  EXPECT_EQ(error["schema"], "venvfix-error/1");
  EXPECT_THAT(error["error"].get<std::string>(), HasSubstr("libcudnn.so.9"));
  EXPECT_EQ(fingerprint(venv), before);

  // cu13 over cu12: --repair needs the index for cu12's wheel, and says so (exit 4).
  CommandResult installed =
      run_pip(venv, {"install", "--index-url", m_index->url(), "nvidia-cudnn-cu13==9.13.0.50"});
  ASSERT_EQ(installed.exit_code, 0) << installed.err;
  const auto mixed = fingerprint(venv);
  CommandResult repair = venvfix(venv, {"uninstall", "nvidia-cudnn-cu13", "--repair"}, unreachable);
  EXPECT_EQ(repair.exit_code, 4) << repair.out << repair.err;
  EXPECT_THAT(repair.err, HasSubstr("127.0.0.1:9"));
  EXPECT_EQ(fingerprint(venv), mixed);
}

}  // namespace
}  // namespace venvfix
