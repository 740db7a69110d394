// Plan once, apply everywhere: `venvfix fetch` puts a plan's wheels into a directory, a real
// nginx serves it on loopback, and copies of one venv (a fleet's hosts built from one image)
// apply the plan with `--offline --find-links URL`: no index is reachable, every byte comes from
// the wheelhouse and is checked against the plan. A corrupted wheelhouse file and a host that
// drifted are refused with the venv untouched.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "support/hermetic.hpp"
#include "support/nginx.hpp"
#include "support/scratch_test.hpp"
#include "support/world.hpp"
#include "txn/apply_test_support.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/sha256.hpp"

namespace venvfix {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using txn::testing::fingerprint;
using txn::testing::fingerprint_diff;
using venvfix::testing::CommandResult;

class Wheelhouse : public venvfix::testing::ScratchTest {
 protected:
  Wheelhouse() : ScratchTest("venvfix-wheelhouse-") {}
  void SetUp() override {
    ScratchTest::SetUp();
    m_plan = path("plan.json");
    m_wheels = path("www/wheels");
  }

  // A host of the fleet: a copy of the image venv (same bytes, same state digest).
  fs::path host(const fs::path& image, const std::string& name) {
    fs::path venv = path("hosts") / name;
    fs::create_directories(venv.parent_path());
    EXPECT_EQ(venvfix::testing::run_command({"cp", "-a", image.string(), venv.string()}).exit_code,
              0);
    return venv;
  }

  // venvfix with `global` options before the command, in the hermetic loader view (so the
  // load check, too, sees the venv's libraries and not the host's CUDA).
  CommandResult venvfix(std::vector<std::string> global, const std::vector<std::string>& args) {
    std::vector<std::string> argv = venvfix::testing::hermetic_prefix();
    argv.push_back(venvfix::testing::venvfix_binary());
    global.insert(global.end(),
                  {"--ld-cache", venvfix::testing::test_world().hermetic_cache.string()});
    argv.insert(argv.end(), global.begin(), global.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return venvfix::testing::run_command(argv, {{"LD_LIBRARY_PATH", ""}}, 300);
  }

  // A host applying the plan from the wheelhouse at `url` with its own empty cache; the index
  // named is dead, and --offline forbids it anyway.
  CommandResult apply_from(const fs::path& venv, const std::string& url, const fs::path& plan) {
    return venvfix(
        {"--venv", venv.string(), "--index-url", "http://127.0.0.1:9/simple", "--cache-dir",
         (venv.parent_path() / (venv.filename().string() + "-cache")).string(), "--offline",
         "--find-links", url},
        {"--json", "apply", plan.string(), "--yes"});
  }

  // The seed venv every host is copied from, its plan made against the world's index, and
  // `venvfix fetch` of that plan into www/wheels (the index stays up until stop_index()).
  CommandResult plan_and_fetch(const std::vector<std::string>& fetch_options = {}) {
    m_index.emplace(venvfix::testing::IndexServer::start(venvfix::testing::test_world().index_dir));
    m_image = venvfix::testing::make_scenario("seed", path("image"));
    std::vector<std::string> planning = online();
    planning.insert(planning.end(), {"--venv", m_image.string()});
    EXPECT_EQ(venvfix(planning, {"plan", "-o", m_plan.string()}).exit_code, 3);
    return fetch(fetch_options);
  }
  CommandResult fetch(std::vector<std::string> options) {
    options.insert(options.end(), {"fetch", m_plan.string(), "--dest", m_wheels.string()});
    return venvfix(online(), options);
  }
  std::vector<std::string> online() const {
    return {"--index-url", m_index->url(), "--cache-dir", path("planner-cache").string()};
  }
  void stop_index() { m_index.reset(); }

  std::optional<venvfix::testing::IndexServer> m_index;
  fs::path m_image;
  fs::path m_plan;    // the plan every host applies
  fs::path m_wheels;  // the wheelhouse nginx serves as /wheels/
};

json parse_json(const std::string& text) {
  json document = json::parse(text, nullptr, false);
  EXPECT_FALSE(document.is_discarded()) << text;
  return document;
}

TEST_F(Wheelhouse, OnePlanFetchedOnceAppliesOnEveryHostFromNginx) {
  if (!venvfix::testing::nginx_available()) GTEST_SKIP() << "nginx is not installed";
  CommandResult fetched = plan_and_fetch({"--json"});
  const fs::path& image = m_image;
  const fs::path& plan = m_plan;
  const fs::path& wheels = m_wheels;
  {
    ASSERT_EQ(fetched.exit_code, 0) << fetched.err;
    json report = parse_json(fetched.out);
    EXPECT_EQ(report["schema"], "venvfix-fetch/1");
    json planned = json::parse(*read_file(plan));
    std::size_t installs = 0;
    for (const json& action : planned["actions"]) {
      if (action["action"] != "install") continue;
      ++installs;
      const fs::path file = wheels / action["file"].get<std::string>();
      auto digest = sha256_file(file);
      ASSERT_TRUE(digest) << file;
      EXPECT_EQ(to_hex(*digest), action["sha256"]) << file;
    }
    ASSERT_GT(installs, 0u);
    ASSERT_EQ(report["wheels"].size(), installs);
    for (const json& wheel : report["wheels"]) EXPECT_TRUE(wheel["written"].get<bool>());
    EXPECT_EQ(report["listed"], installs);
    // Again: the wheelhouse already holds those bytes; nothing is written.
    fetched = fetch({"--json"});
    ASSERT_EQ(fetched.exit_code, 0) << fetched.err;
    const json again = parse_json(fetched.out);
    for (const json& wheel : again["wheels"]) EXPECT_FALSE(wheel["written"].get<bool>());
  }
  stop_index();  // from here on, no index

  auto nginx = venvfix::testing::NginxServer::start(path("www"), path("nginx"));
  ASSERT_TRUE(nginx) << "nginx did not start; see " << path("nginx/error.log");
  // The real pip reads the page `fetch` wrote as a find-links page and checks its hashes.
  const json plan_document = json::parse(*read_file(plan));
  for (const json& action : plan_document["actions"]) {
    if (action["action"] != "install") continue;
    CommandResult pip = venvfix::testing::run_command(
        {(image / "bin/python").string(), "-m", "pip", "download", "--no-deps", "--no-index",
         "--find-links", nginx->url("/wheels/"), "-d", path("pip-download").string(),
         action["dist"].get<std::string>() + "==" + action["version"].get<std::string>()},
        {{"PIP_DISABLE_PIP_VERSION_CHECK", "1"}}, 120);
    EXPECT_EQ(pip.exit_code, 0) << pip.out << pip.err;
    EXPECT_TRUE(fs::exists(path("pip-download") / action["file"].get<std::string>()));
  }
  for (const char* name : {"a", "b"}) {
    const fs::path venv = host(image, name);
    ASSERT_NE(venvfix::testing::import_torch(venv).exit_code, 0);  // the seed breakage
    CommandResult applied = apply_from(venv, nginx->url("/wheels/"), plan);
    ASSERT_EQ(applied.exit_code, 0) << applied.err;
    CommandResult imported = venvfix::testing::import_torch(venv);
    EXPECT_EQ(imported.exit_code, 0) << imported.err;
  }
  auto log = read_file(nginx->access_log());
  ASSERT_TRUE(log);
  for (const auto& entry : fs::directory_iterator(wheels)) {
    if (entry.path().extension() != ".whl") continue;
    const std::string request = "GET /wheels/" + entry.path().filename().string();
    // pip fetched each wheel once, and each host once (its own empty cache).
    std::size_t count = 0;
    for (std::size_t at = log->find(request); at != std::string::npos;
         at = log->find(request, at + 1)) {
      ++count;
    }
    EXPECT_EQ(count, 3u) << request;
  }
}

TEST_F(Wheelhouse, ACorruptWheelhouseFileAndADriftedHostAreRefusedUntouched) {
  if (!venvfix::testing::nginx_available()) GTEST_SKIP() << "nginx is not installed";
  ASSERT_EQ(plan_and_fetch().exit_code, 0);
  stop_index();
  const fs::path& image = m_image;
  const fs::path& plan = m_plan;
  const fs::path& wheels = m_wheels;
  // One byte of one wheel flipped after the page was written: the page's hash (and the plan's)
  // no longer match the bytes served.
  fs::path victim;
  for (const auto& entry : fs::directory_iterator(wheels)) {
    if (entry.path().extension() == ".whl") victim = entry.path();
  }
  ASSERT_FALSE(victim.empty());
  {
    std::fstream file(victim, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(100);
    char byte = 0;
    file.read(&byte, 1);
    file.seekp(100);
    byte = static_cast<char>(byte ^ 0x01);
    file.write(&byte, 1);
  }
  auto nginx = venvfix::testing::NginxServer::start(path("www"), path("nginx"));
  ASSERT_TRUE(nginx) << "nginx did not start; see " << path("nginx/error.log");

  const fs::path corrupt_host = host(image, "c");
  auto before = fingerprint(corrupt_host);
  CommandResult refused = apply_from(corrupt_host, nginx->url("/wheels/"), plan);
  EXPECT_EQ(refused.exit_code, 4) << refused.out << refused.err;
  EXPECT_THAT(refused.err, HasSubstr(victim.filename().string()));
  EXPECT_THAT(refused.err, HasSubstr("sha256"));
  EXPECT_EQ(parse_json(refused.out)["schema"], "venvfix-error/1");
  auto after = fingerprint(corrupt_host);
  EXPECT_EQ(after, before) << ::testing::PrintToString(fingerprint_diff(before, after));

  // A host whose venv changed after planning: exit 7, naming what changed.
  const fs::path drifted = host(image, "d");
  CommandResult pip = venvfix::testing::run_command(
      {(drifted / "bin/python").string(), "-m", "pip", "uninstall", "-y", "nvidia-cublas"},
      {{"PIP_DISABLE_PIP_VERSION_CHECK", "1"}}, 120);
  ASSERT_EQ(pip.exit_code, 0) << pip.err;
  before = fingerprint(drifted);
  refused = apply_from(drifted, nginx->url("/wheels/"), plan);
  EXPECT_EQ(refused.exit_code, 7) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("nvidia-cublas "));
  EXPECT_THAT(refused.err, HasSubstr(" is gone"));
  EXPECT_THAT(refused.err, HasSubstr("the venv is unchanged"));
  after = fingerprint(drifted);
  EXPECT_EQ(after, before) << ::testing::PrintToString(fingerprint_diff(before, after));
}

}  // namespace
}  // namespace venvfix
