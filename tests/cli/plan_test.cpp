// `venvfix plan` end to end: the real binary on scenario venvs of the test world, the world's
// index on loopback (and a fault-injecting one), the hermetic loader view.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "fetch/test_server.hpp"
#include "plan/plan_test_support.hpp"
#include "support/commands.hpp"
#include "support/scratch_test.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class PlanCli : public venvfix::testing::ScratchTest {
 protected:
  PlanCli() : ScratchTest("venvfix-plan-cli-") {}
  venvfix::testing::CommandResult run(
      const fs::path& venv, const std::vector<std::string>& args,
      const std::string& index_url = plan::testing::world_index_url()) {
    return venvfix::testing::run_venvfix({.index_url = index_url,
                                          .cache_dir = path("cache"),
                                          .options = {"--timeout", "5"},
                                          .hermetic = venvfix::testing::Hermetic::no,
                                          .timeout_seconds = 120},
                                         venv, args);
  }
};

TEST_F(PlanCli, SeedPlanIsDeterministicAndWrittenWithDashO) {
  fs::path venv = scenario("seed");
  fs::path out = m_dir->path() / "plan.json";
  auto first = run(venv, {"--json", "plan", "-o", out.string()});
  EXPECT_EQ(first.exit_code, 3) << first.err;
  auto second = run(venv, {"--json", "plan"});
  EXPECT_EQ(second.exit_code, 3) << second.err;
  EXPECT_EQ(first.out, second.out);  // byte-identical
  auto written = read_file(out);
  ASSERT_TRUE(written);
  EXPECT_EQ(*written, first.out);

  json document = json::parse(first.out);
  EXPECT_EQ(document["schema"], "venvfix-plan/1");
  EXPECT_EQ(document["venv"], venv.string());
  EXPECT_EQ(document["targets"], json::array({"torch"}));
  EXPECT_EQ(document["state"].get<std::string>().size(), 64u);
  ASSERT_EQ(document["actions"].size(), 1u);
  const json& action = document["actions"][0];
  EXPECT_EQ(action["action"], "install");
  EXPECT_EQ(action["dist"], "nvidia-cudnn-cu12");
  EXPECT_EQ(action["version"], "9.10.2.21");
  EXPECT_EQ(action["replaces"]["version"], "9.10.2.21");
  for (const char* key : {"file", "url", "sha256", "size", "provides", "reason"}) {
    EXPECT_TRUE(action.contains(key)) << key;
  }
  // The document reads back.
  auto parsed = plan::parse_plan(first.out, "plan.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(plan::to_text(*parsed), first.out);
}

TEST_F(PlanCli, HumanTableShowsTheActionsAndTheDownloadSize) {
  auto result = run(plan::testing::shared_scenario("killed-install"), {"plan"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_THAT(result.out, HasSubstr("ACTION"));
  EXPECT_THAT(result.out, HasSubstr("install  nvidia-cublas-cu12 12.8.4.1"));
  EXPECT_THAT(result.out, HasSubstr("1 action, "));
  EXPECT_THAT(result.out, HasSubstr(" to download"));
}

TEST_F(PlanCli, HealthyHasNothingToDo) {
  auto result = run(plan::testing::shared_scenario("healthy"), {"plan"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("nothing to do"));
}

TEST_F(PlanCli, NoTorchAndNoElfObjectsIsNothingToCheck) {
  fs::path venv = m_dir->path() / "plain";
  auto made =
      venvfix::testing::run_command({"python3", "-m", "venv", "--without-pip", venv.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto result = run(venv, {"plan"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("nothing to check"));
}

TEST_F(PlanCli, IndexAnswering500IsExit4) {
  venvfix::testing::TestServer server("fault_server.py", venvfix::testing::test_world().index_dir);
  ASSERT_TRUE(server.running());
  auto result =
      run(plan::testing::shared_scenario("seed"), {"plan"}, server.url("/fault/500/1000/simple"));
  EXPECT_EQ(result.exit_code, 4) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("HTTP 500"));
  EXPECT_THAT(result.err, HasSubstr("nvidia-cudnn-cu12"));
}

TEST_F(PlanCli, PinnedVersionMissingFromTheIndexIsExit4WithAdvice) {
  // A file:// index whose nvidia-cudnn-cu12 page has only the newer 9.22.0.52.
  const auto& world = venvfix::testing::test_world();
  std::string wheel = "nvidia_cudnn_cu12-9.22.0.52-py3-none-manylinux_2_27_x86_64.whl";
  auto digest = sha256_file(world.wheels_dir / wheel);
  ASSERT_TRUE(digest);
  fs::path page = m_dir->path() / "index" / "nvidia-cudnn-cu12" / "index.html";
  fs::create_directories(page.parent_path());
  std::ofstream(page) << "<html><body><a href=\"file://" << (world.wheels_dir / wheel).string()
                      << "#sha256=" << to_hex(*digest) << "\">" << wheel << "</a></body></html>\n";
  std::string index_url = "file://" + (m_dir->path() / "index").string();
  auto result = run(plan::testing::shared_scenario("seed"), {"plan"}, index_url);
  EXPECT_EQ(result.exit_code, 4) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("==9.10.2.21"));
  EXPECT_THAT(result.err, HasSubstr(index_url));
  EXPECT_THAT(result.err, HasSubstr("manylinux"));  // the tags it tried
  EXPECT_THAT(result.err, HasSubstr("--find-links"));
}

TEST_F(PlanCli, UninstallOfAnUninstalledDistributionIsExit2) {
  auto result =
      run(plan::testing::shared_scenario("healthy"), {"plan", "--uninstall", "no-such-dist"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_THAT(result.err, HasSubstr("no-such-dist"));
}

TEST_F(PlanCli, RemoveForeignCudaAndTargetFlags) {
  auto result =
      run(scenario("cuda-mix"), {"--json", "plan", "--remove-foreign-cuda", "--target", "torch"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  json document = json::parse(result.out);
  std::vector<std::string> removed;
  for (const json& action : document["actions"]) {
    if (action["action"] == "remove") removed.push_back(action["dist"]);
  }
  EXPECT_THAT(removed,
              ::testing::ElementsAre("nvidia-cublas", "nvidia-cuda-runtime", "nvidia-nccl-cu13"));
}

TEST_F(PlanCli, FindingsAreExactlyDoctorsWarningsIncluded) {
  for (const char* name : {"cuda-mix", "seed", "healthy"}) {
    fs::path venv = plan::testing::shared_scenario(name);
    auto doctor = run(venv, {"--json", "doctor"});
    auto planned = run(venv, {"--json", "plan"});
    json findings = json::parse(doctor.out)["findings"];
    EXPECT_EQ(json::parse(planned.out)["findings"], findings) << name;
    for (const json& finding : findings) EXPECT_TRUE(finding.contains("severity")) << name;
  }
  // cuda-mix has warnings, and they are in the plan too.
  json document =
      json::parse(run(plan::testing::shared_scenario("cuda-mix"), {"--json", "plan"}).out);
  bool warning = false;
  for (const json& finding : document["findings"]) warning |= finding["severity"] == "warning";
  EXPECT_TRUE(warning) << document["findings"].dump(2);
}

TEST_F(PlanCli, FreshInstallsCarryReplacesNull) {
  auto result = run(plan::testing::shared_scenario("all-nvidia-removed"), {"--json", "plan"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  json document = json::parse(result.out);
  ASSERT_FALSE(document["actions"].empty());
  for (const json& action : document["actions"]) {
    ASSERT_TRUE(action.contains("replaces")) << action.dump();
    EXPECT_TRUE(action["replaces"].is_null()) << action.dump();
  }
  EXPECT_THAT(result.out, HasSubstr("\"replaces\": null"));
  auto parsed = plan::parse_plan(result.out, "plan.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(plan::to_text(*parsed), result.out);  // byte for byte
}

}  // namespace
}  // namespace venvfix
