// `venvfix apply` while another installer works in the venv: a real pip installs a wheel while
// venvfix's download is held by the fault server; apply must then exit 7 and move nothing.
#include <chrono>
#include <future>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fetch/test_server.hpp"
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
using namespace std::chrono_literals;

class ApplyConcurrentCli : public venvfix::testing::ScratchTest {
 protected:
  ApplyConcurrentCli() : ScratchTest("venvfix-apply-concurrent-") {}
  void SetUp() override {
    ScratchTest::SetUp();
    m_index.emplace(venvfix::testing::IndexServer::start(venvfix::testing::test_world().index_dir));
  }

  CommandResult venvfix(const fs::path& venv, const std::vector<std::string>& args) {
    // The held download must not time out meanwhile.
    return venvfix::testing::run_venvfix({.index_url = m_index->url(),
                                          .cache_dir = path("cache"),
                                          .options = {"--timeout", "300", "-q"},
                                          .hermetic = venvfix::testing::Hermetic::no,
                                          .timeout_seconds = 400},
                                         venv, args);
  }

  // Waits until `file` exists or `done` is ready; true when the file is there.
  static bool wait_for(const fs::path& file, std::future<CommandResult>& done) {
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::error_code ignored;
      if (fs::exists(file, ignored)) return true;
      if (done.wait_for(50ms) == std::future_status::ready) return fs::exists(file, ignored);
    }
    return false;
  }

  std::optional<venvfix::testing::IndexServer> m_index;
};

TEST_F(ApplyConcurrentCli, APipInstallDuringTheDownloadsMakesApplyExit7AndMovesNothing) {
  fs::path venv = scenario("seed");
  CommandResult planned = venvfix(venv, {"plan", "-o", path("plan.json").string()});
  ASSERT_EQ(planned.exit_code, 3) << planned.err;
  auto text = read_file(path("plan.json"));
  ASSERT_TRUE(text);
  json document = json::parse(*text);
  ASSERT_FALSE(document["actions"].empty());

  // The first wheel's download waits at the fault server until the test releases it.
  const fs::path hold = path("hold");
  fs::create_directories(hold);
  venvfix::testing::TestServer faults("fault_server.py", venvfix::testing::test_world().index_dir,
                                      {"--hold-dir", hold.string()});
  ASSERT_TRUE(faults.running());
  std::size_t held = document["actions"].size();
  for (std::size_t i = 0; i < document["actions"].size(); ++i) {
    if (document["actions"][i]["action"] != "install") continue;
    const std::string file = document["actions"][i]["file"].get<std::string>();
    document["actions"][i]["url"] = faults.url("/fault/hold/1000/files/" + file);
    held = i;
    break;
  }
  ASSERT_LT(held, document["actions"].size()) << "the plan installs nothing";
  txn::testing::write_text(path("held-plan.json"), document.dump(2) + "\n");

  // A small wheel for pip, made before apply starts.
  const fs::path tree = path("tree");
  txn::testing::write_text(tree / "concurrent_demo/__init__.py", "VALUE = 1\n");
  txn::testing::MadeWheel wheel =
      txn::testing::make_wheel(path("wheels"), "concurrent-demo", "1.0", tree, {"--purelib"});
  ASSERT_TRUE(fs::exists(wheel.path));

  std::future<CommandResult> apply = std::async(std::launch::async, [&] {
    return venvfix(venv, {"--json", "apply", "--yes", path("held-plan.json").string()});
  });
  const bool download_held = wait_for(hold / "held", apply);
  if (!download_held) {
    txn::testing::write_text(hold / "release", "");
    CommandResult early = apply.get();
    FAIL() << "the download was never held; apply exited " << early.exit_code << ": " << early.err;
  }
  // pip changes the venv while venvfix waits for its download.
  CommandResult pip = venvfix::testing::run_pip(
      venv, {"install", "--no-deps", "--no-index", "--no-cache-dir", wheel.path.string()});
  const auto after_pip = fingerprint(venv);
  txn::testing::write_text(hold / "release", "");
  CommandResult result = apply.get();
  ASSERT_EQ(pip.exit_code, 0) << pip.out << pip.err;

  EXPECT_EQ(result.exit_code, 7) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr(venv.string()));
  EXPECT_THAT(result.err, HasSubstr("concurrent_demo-1.0.dist-info"));
  json error = json::parse(result.out, nullptr, false);
  ASSERT_FALSE(error.is_discarded()) << result.out;
  EXPECT_EQ(error["schema"], "venvfix-error/1");
  EXPECT_EQ(error["exit_code"], 7);
  EXPECT_THAT(error["error"].get<std::string>(), HasSubstr("nothing was moved"));
  // Nothing moved: the venv is as pip left it, and no journal or staging is left behind.
  expect_tree_is(venv, after_pip);
  EXPECT_FALSE(fs::exists(venv / ".venvfix/journal") && !fs::is_empty(venv / ".venvfix/journal"))
      << "a journal was left behind";
  EXPECT_FALSE(fs::exists(venv / ".venvfix/staging") && !fs::is_empty(venv / ".venvfix/staging"))
      << "staging was left behind";
}

}  // namespace
}  // namespace venvfix
