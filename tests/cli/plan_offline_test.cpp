// `--offline` and the page cache end to end: the real binary, the test world's index served by
// tests/servers/index_server.py on loopback with a request log, and the server stopped for the
// offline runs. Every failure leaves the venv exactly as it was.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fetch/test_server.hpp"
#include "support/commands.hpp"
#include "support/scratch_test.hpp"
#include "support/world.hpp"
#include "txn/apply_test_support.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using txn::testing::expect_tree_is;
using txn::testing::fingerprint;
using venvfix::testing::CommandResult;

class PlanOffline : public venvfix::testing::ScratchTest {
 protected:
  PlanOffline() : ScratchTest("venvfix-plan-offline-") {}
  void start(std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"--log", path("requests.log").string()});
    m_server = std::make_unique<venvfix::testing::TestServer>(
        "index_server.py", venvfix::testing::test_world().index_dir, extra);
    ASSERT_TRUE(m_server->running());
    m_index_url = m_server->url("/simple");
  }
  void stop() { m_server.reset(); }

  // venvfix with this test's index URL (also once the server is gone) and cache.
  CommandResult venvfix(const fs::path& venv, const std::vector<std::string>& args) {
    return venvfix::testing::run_venvfix(
        {.index_url = m_index_url, .cache_dir = path("cache"), .options = {"--timeout", "5"}}, venv,
        args);
  }

  // Requests the server saw for project pages (/simple/<name>/), the log emptied.
  std::vector<json> page_requests() {
    std::vector<json> out;
    std::string text = venvfix::testing::read_text(path("requests.log"));
    for (std::string_view line : split(text, '\n')) {
      if (trim(line).empty()) continue;
      json entry = json::parse(line);
      if (entry["path"].get<std::string>().starts_with("/simple/")) out.push_back(entry);
    }
    std::error_code error;
    fs::remove(path("requests.log"), error);
    return out;
  }

  std::unique_ptr<venvfix::testing::TestServer> m_server;
  std::string m_index_url;
};

TEST_F(PlanOffline, CacheFillsRevalidatesWith304ThenPlansAndAppliesOffline) {
  start();
  fs::path venv = scenario("seed");
  fs::path earlier = scenario("seed");  // an earlier run repaired another venv: wheels cached
  CommandResult first = venvfix(venv, {"--json", "plan"});
  ASSERT_EQ(first.exit_code, 3) << first.err;
  std::vector<json> filled = page_requests();
  ASSERT_FALSE(filled.empty());
  for (const json& request : filled) {
    EXPECT_TRUE(request["if_none_match"].is_null()) << request.dump();
    EXPECT_EQ(request["status"], 200) << request.dump();
  }
  EXPECT_GT(venvfix::testing::count_files(path("cache/pages")), 0u);

  // The world's pages carry no Cache-Control: revalidated at every use, never downloaded again.
  CommandResult second = venvfix(venv, {"--json", "plan"});
  ASSERT_EQ(second.exit_code, 3) << second.err;
  EXPECT_EQ(second.out, first.out);
  std::vector<json> revalidated = page_requests();
  ASSERT_EQ(revalidated.size(), filled.size());
  for (const json& request : revalidated) {
    EXPECT_TRUE(request["if_none_match"].is_string()) << request.dump();
    EXPECT_EQ(request["status"], 304) << request.dump();
  }
  CommandResult repaired = venvfix(earlier, {"apply", "--yes"});
  ASSERT_EQ(repaired.exit_code, 0) << repaired.out << repaired.err;

  stop();
  CommandResult offline =
      venvfix(venv, {"--offline", "--json", "plan", "-o", path("p.json").string()});
  ASSERT_EQ(offline.exit_code, 3) << offline.err;
  EXPECT_EQ(offline.out, first.out);  // the same plan, byte for byte
  CommandResult applied = venvfix(venv, {"--offline", "apply", path("p.json").string()});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  CommandResult healthy = venvfix(venv, {"--offline", "doctor"});
  EXPECT_EQ(healthy.exit_code, 0) << healthy.out << healthy.err;
}

TEST_F(PlanOffline, AProjectNoRunCachedIsExit4NamingIt) {
  start();  // only for a URL where nothing listens once it stops
  stop();
  fs::path venv = scenario("seed");
  const auto before = fingerprint(venv);
  CommandResult result = venvfix(venv, {"--offline", "plan"});
  EXPECT_EQ(result.exit_code, 4) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("offline"));
  EXPECT_THAT(result.err, HasSubstr("'nvidia-cudnn-cu12'"));
  EXPECT_THAT(result.err, HasSubstr("/simple/nvidia-cudnn-cu12/"));
  CommandResult apply = venvfix(venv, {"--offline", "apply", "--yes"});
  EXPECT_EQ(apply.exit_code, 4) << apply.out << apply.err;
  EXPECT_THAT(apply.err, HasSubstr("'nvidia-cudnn-cu12'"));
  expect_tree_is(venv, before);
}

TEST_F(PlanOffline, AWheelNoRunCachedIsExit4NamingIt) {
  start();
  fs::path venv = scenario("seed");
  const auto before = fingerprint(venv);
  CommandResult planned = venvfix(venv, {"plan", "-o", path("p.json").string()});
  ASSERT_EQ(planned.exit_code, 3) << planned.err;  // pages cached; the index gave hash and size
  stop();
  CommandResult applied = venvfix(venv, {"--offline", "apply", path("p.json").string()});
  EXPECT_EQ(applied.exit_code, 4) << applied.out << applied.err;
  EXPECT_THAT(applied.err, HasSubstr("offline"));
  EXPECT_THAT(applied.err, HasSubstr("nvidia_cudnn_cu12-9.10.2.21-"));
  expect_tree_is(venv, before);
}

TEST_F(PlanOffline, FindLinksServeAProjectNoRunCached) {
  start();  // only for a URL where nothing listens once it stops
  stop();
  fs::path venv = scenario("seed");
  const auto& world = venvfix::testing::test_world();
  CommandResult result =
      venvfix(venv, {"--offline", "--find-links", world.wheels_dir.string(), "--json", "plan"});
  ASSERT_EQ(result.exit_code, 3) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("from find-links only"));
  json document = json::parse(result.out);
  ASSERT_EQ(document["actions"].size(), 1u) << result.out;
  EXPECT_EQ(document["actions"][0]["dist"], "nvidia-cudnn-cu12");
  EXPECT_THAT(document["actions"][0]["url"].get<std::string>(), ::testing::StartsWith("file://"));
}

TEST_F(PlanOffline, NoStorePagesAreNotCached) {
  start({"--cache-control", "no-store"});
  fs::path venv = scenario("seed");
  const auto before = fingerprint(venv);
  ASSERT_EQ(venvfix(venv, {"plan"}).exit_code, 3);
  ASSERT_EQ(venvfix(venv, {"plan"}).exit_code, 3);
  for (const json& request : page_requests()) {
    EXPECT_TRUE(request["if_none_match"].is_null()) << request.dump();
  }
  EXPECT_EQ(venvfix::testing::count_files(path("cache/pages")), 0u);
  stop();
  CommandResult offline = venvfix(venv, {"--offline", "plan"});
  EXPECT_EQ(offline.exit_code, 4) << offline.out << offline.err;
  EXPECT_THAT(offline.err, HasSubstr("'nvidia-cudnn-cu12'"));
  expect_tree_is(venv, before);
}

TEST_F(PlanOffline, FreshPagesAreNotAskedForAgain) {
  start({"--cache-control", "max-age=600"});
  fs::path venv = scenario("seed");
  ASSERT_EQ(venvfix(venv, {"plan"}).exit_code, 3);
  EXPECT_FALSE(page_requests().empty());
  ASSERT_EQ(venvfix(venv, {"plan"}).exit_code, 3);
  EXPECT_THAT(page_requests(), ::testing::IsEmpty());
}

}  // namespace
}  // namespace venvfix
