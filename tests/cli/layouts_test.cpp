// Environments that are not plain venvs, end to end with the real binary on pip-made scenarios
// (docs/test-world.md "Layouts"): a `pip install --prefix` tree, a Debian-style prefix, a
// uv-shaped venv, and --system-site-packages venvs with the ghost in the base or in the venv.
// On each: doctor finds the ghost, plan/apply repair it in the right layer, `import torch`
// works in the hermetic view, rollback restores the tree, and nothing outside the layer changes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/commands.hpp"
#include "support/scratch_test.hpp"
#include "support/world_for.hpp"
#include "txn/apply_test_support.hpp"

namespace venvfix {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using txn::testing::expect_tree_is;
using txn::testing::fingerprint;
using venvfix::testing::CommandResult;

// What doctor reports for the seed, wherever it is (tests/cli/doctor_test.cpp, DoctorCli).
const std::vector<std::string> k_seed_problems = {"ghost-files nvidia-cudnn-cu12",
                                                  "unresolved-soname libcudnn.so.9"};

class LayoutsCli : public venvfix::testing::ScratchTest {
 protected:
  LayoutsCli() : ScratchTest("venvfix-layouts-") {}

  // venvfix on `where` (--venv, or the given selector) with this test's index and cache and the
  // hermetic loader view, inside the hermetic namespace when it is available.
  CommandResult venvfix(const fs::path& where, const std::vector<std::string>& args,
                        const std::string& selector = "--venv") {
    if (!m_index) {
      m_index.emplace(venvfix::testing::IndexServer::start(
          m_index_root.empty() ? venvfix::testing::test_world().index_dir : m_index_root));
    }
    return venvfix::testing::run_venvfix({.index_url = m_index->url(),
                                          .cache_dir = path("cache"),
                                          .options = {"-q"},
                                          .selector = selector},
                                         where, args);
  }

  // `import torch` by `python` in the hermetic view, with `path` in front of sys.path.
  CommandResult import_torch(const fs::path& python, const std::string& path_dir = "") {
    std::string code = "import sys\n";
    if (!path_dir.empty()) code += "sys.path.insert(0, " + json(path_dir).dump() + ")\n";
    code += "import torch\n";
    return venvfix::testing::run_hermetic({python.string(), "-I", "-B", "-c", code});
  }

  json doctor(const fs::path& where, int expected_exit) {
    CommandResult result = venvfix(where, {"--json", "doctor"});
    EXPECT_EQ(result.exit_code, expected_exit) << result.out << result.err;
    return json::parse(result.out);
  }

  // The problems of a doctor document as "kind dist-or-soname [layer]".
  static std::vector<std::string> problems(const json& report) {
    std::vector<std::string> out;
    for (const json& finding : report["findings"]) {
      if (finding["severity"] != "problem") continue;
      std::string line = finding["kind"].get<std::string>() + " " +
                         finding.value("dist", finding.value("soname", ""));
      if (finding.contains("layer")) line += " [" + finding["layer"].get<std::string>() + "]";
      out.push_back(line);
    }
    return out;
  }

  // plan, apply --snapshot, doctor healthy, rollback byte for byte; `outside`: a tree that must
  // not change (the base prefix, the system's dist-packages). Returns the apply report.
  json repair_and_roll_back(const fs::path& env, const fs::path& outside = {}) {
    const auto broken = fingerprint(env);
    const auto outside_before = outside.empty() ? decltype(broken){} : fingerprint(outside);
    CommandResult planned = venvfix(env, {"--json", "plan", "-o", path("plan.json").string()});
    EXPECT_EQ(planned.exit_code, 3) << planned.out << planned.err;
    CommandResult applied =
        venvfix(env, {"--json", "apply", path("plan.json").string(), "--snapshot"});
    EXPECT_EQ(applied.exit_code, 0) << applied.out << applied.err;
    json report = applied.exit_code == 0 ? json::parse(applied.out) : json::object();
    doctor(env, 0);
    if (!outside.empty()) {
      expect_tree_is(outside, outside_before);
    }
    if (report.contains("snapshot") && report["snapshot"].is_string()) {
      CommandResult rolled = venvfix(env, {"rollback", report["snapshot"].get<std::string>()});
      EXPECT_EQ(rolled.exit_code, 0) << rolled.out << rolled.err;
      expect_tree_is(env, broken);
    }
    return report;
  }

  static fs::path site(const fs::path& prefix, const std::string& dir = "site-packages") {
    return prefix / "lib/python3.11" / dir;
  }

  // The seed made by pyenv's Python `version`, diagnosed, repaired and rolled back.
  void seed_by(std::string_view version) {
    const fs::path python = venvfix::testing::pyenv_python(version);
    if (python.empty()) GTEST_SKIP() << "no pyenv Python " << version;
    m_index_root = venvfix::testing::test_world_for(python).index_dir;
    fs::path venv = venvfix::testing::make_scenario_for(python, "seed", m_dir->path());
    ASSERT_TRUE(fs::is_directory(venv / "lib" / ("python" + std::string(version))));
    json report = doctor(venv, 3);
    EXPECT_EQ(report["python"], version);
    EXPECT_THAT(problems(report), ::testing::UnorderedElementsAreArray(k_seed_problems))
        << report.dump(2);
    json applied = repair_and_roll_back(venv);
    EXPECT_EQ(applied["verification"]["probe"]["ok"], true) << applied.dump(2);
  }

  fs::path m_index_root;  // the index of the world the scenario came from (default: test_world())
  std::optional<venvfix::testing::IndexServer> m_index;
};

MATCHER_P(HasAction, dist, "") {
  for (const json& action : arg["actions"]) {
    if (action["dist"] == dist) return true;
  }
  return false;
}

TEST_F(LayoutsCli, SeedInAVenvOfPython312) {
  seed_by("3.12");
}
TEST_F(LayoutsCli, SeedInAVenvOfPython313) {
  seed_by("3.13");
}

TEST_F(LayoutsCli, PipPrefixTreeWithALinkedInterpreter) {
  fs::path prefix = scenario("prefix-seed");
  ASSERT_FALSE(fs::exists(prefix / "pyvenv.cfg"));
  if (venvfix::testing::hermetic_available()) {
    ASSERT_NE(import_torch(prefix / "bin/python3", site(prefix).string()).exit_code, 0);
  }
  json report = doctor(prefix, 3);
  EXPECT_THAT(problems(report), ::testing::UnorderedElementsAreArray(k_seed_problems))
      << report.dump(2);
  json applied = repair_and_roll_back(prefix);
  EXPECT_THAT(applied, HasAction("nvidia-cudnn-cu12")) << applied.dump(2);
  EXPECT_EQ(applied["verification"]["probe"]["ok"], true) << applied.dump(2);
}

TEST_F(LayoutsCli, DebianStylePrefixKeepsTheSystemsPackages) {
  if (!fs::exists("/usr/bin/python3.11")) GTEST_SKIP() << "no Debian python3.11";
  fs::path prefix = scenario("debian-seed");
  const fs::path system = prefix / "lib/python3/dist-packages";
  json report = doctor(prefix, 3);
  EXPECT_THAT(problems(report), ::testing::UnorderedElementsAreArray(k_seed_problems))
      << report.dump(2);
  // The apt-installed package is never planned away.
  CommandResult refused = venvfix(prefix, {"--json", "plan", "--uninstall", "blinker"});
  json plan = json::parse(refused.out);
  EXPECT_THAT(plan, ::testing::Not(HasAction("blinker"))) << plan.dump(2);
  const json* kept = nullptr;
  for (const json& entry : plan["unresolved"]) {
    if (entry["kind"] == "protected-layer") kept = &entry;
  }
  ASSERT_NE(kept, nullptr) << plan.dump(2);
  EXPECT_EQ((*kept)["dist"], "blinker");
  EXPECT_EQ((*kept)["layer"], "system");
  EXPECT_THAT((*kept)["message"].get<std::string>(), HasSubstr("system package manager"));
  json applied = repair_and_roll_back(prefix, system);
  EXPECT_THAT(applied, HasAction("nvidia-cudnn-cu12")) << applied.dump(2);
}

TEST_F(LayoutsCli, UvShapedVenv) {
  fs::path venv = scenario("uv-seed");
  ASSERT_FALSE(fs::exists(site(venv) / "pip"));
  json report = doctor(venv, 3);
  EXPECT_THAT(problems(report), ::testing::UnorderedElementsAreArray(k_seed_problems))
      << report.dump(2);
  json applied = repair_and_roll_back(venv);
  EXPECT_THAT(applied, HasAction("nvidia-cudnn-cu12")) << applied.dump(2);
}

// The false "healthy" of issue 14: torch in the base, broken there; the venv itself is empty.
// A copy in the venv cannot repair a torch that sits in the base (its RPATH looks there only):
// the venv's plan says so and changes nothing; the base, as a prefix, is repaired in place and
// the venv's tree stays as it was.
TEST_F(LayoutsCli, GhostInTheBaseIsFoundAndRepairedInTheBase) {
  fs::path scenario = venvfix::testing::make_scenario("base-ghost", m_dir->path());
  const fs::path venv = scenario / "venv", base = scenario / "base";
  if (venvfix::testing::hermetic_available()) {
    ASSERT_NE(import_torch(venv / "bin/python").exit_code, 0) << "the base must be broken";
  }
  json report = doctor(venv, 3);
  EXPECT_THAT(problems(report),
              ::testing::UnorderedElementsAre("ghost-files nvidia-cudnn-cu12 [base]",
                                              "unresolved-soname libcudnn.so.9"))
      << report.dump(2);
  EXPECT_THAT(report["targets"], ::testing::Contains("torch"));

  const auto base_before = fingerprint(base), venv_before = fingerprint(venv);
  CommandResult planned = venvfix(venv, {"--json", "plan"});
  EXPECT_EQ(planned.exit_code, 3) << planned.out << planned.err;
  json plan = json::parse(planned.out);
  EXPECT_TRUE(plan["actions"].empty()) << plan.dump(2);
  bool named = false;
  for (const json& entry : plan["unresolved"]) {
    named |=
        entry["kind"] == "protected-layer" && entry["layer"] == "base" &&
        entry["message"].get<std::string>().find("--venv " + base.string()) != std::string::npos;
  }
  EXPECT_TRUE(named) << plan.dump(2);
  EXPECT_EQ(fingerprint(base), base_before);

  // The base is a prefix: repaired in its own layer; the venv's tree does not change.
  json applied = repair_and_roll_back(base, venv);
  EXPECT_THAT(applied, HasAction("nvidia-cudnn-cu12")) << applied.dump(2);
  CommandResult again = venvfix(base, {"--json", "apply", "--yes"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  doctor(venv, 0);
  if (venvfix::testing::hermetic_available()) {
    CommandResult imported = import_torch(venv / "bin/python");
    EXPECT_EQ(imported.exit_code, 0) << imported.err;
  }
  expect_tree_is(venv, venv_before);
}

TEST_F(LayoutsCli, GhostInTheVenvShadowingAHealthyBase) {
  fs::path scenario = venvfix::testing::make_scenario("venv-ghost", m_dir->path());
  const fs::path venv = scenario / "venv", base = scenario / "base";
  json report = doctor(venv, 3);
  // torch's RPATH still finds the base's cuDNN: only the venv's ghost is wrong.
  EXPECT_THAT(problems(report), ::testing::UnorderedElementsAre("ghost-files nvidia-cudnn-cu12"))
      << report.dump(2);
  json applied = repair_and_roll_back(venv, base);
  EXPECT_THAT(applied, HasAction("nvidia-cudnn-cu12")) << applied.dump(2);
}

// A prefix venvfix cannot write (a read-only bind mount in a private mount namespace): its
// state goes under the cache directory, keyed by the prefix path, and it says so.
TEST_F(LayoutsCli, ReadOnlyPrefixKeepsItsStateInTheCache) {
  if (!venvfix::testing::hermetic_available()) GTEST_SKIP() << "needs root and unshare";
  // Settled: the hash cache, which the test looks for, is written only with digests it keeps.
  fs::path prefix = settled_scenario("prefix-seed");
  const fs::path cache = path("cache");
  CommandResult result = venvfix::testing::run_command(
      {"unshare", "-m", "--propagation", "private", "sh", "-c",
       "mount --bind \"$1\" \"$1\" && mount -o remount,bind,ro \"$1\" && shift && exec \"$@\"",
       "sh", prefix.string(), venvfix::testing::venvfix_binary(), "--venv", prefix.string(),
       "--cache-dir", cache.string(), "--ld-cache",
       venvfix::testing::test_world().hermetic_cache.string(), "--json", "doctor"},
      {{"LD_LIBRARY_PATH", ""}}, 300);
  EXPECT_EQ(result.exit_code, 3) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr(prefix.string() + " is not writable"));
  EXPECT_FALSE(fs::exists(prefix / ".venvfix"));
  std::vector<fs::path> states;
  std::error_code ec;
  for (fs::directory_iterator it(cache / "prefixes", ec), end; !ec && it != end; it.increment(ec)) {
    states.push_back(it->path());
  }
  ASSERT_EQ(states.size(), 1u) << result.err;
  EXPECT_TRUE(states[0].filename().string().starts_with(prefix.filename().string() + "-"));
  EXPECT_THAT(result.err, HasSubstr(states[0].string()));
  EXPECT_TRUE(fs::exists(states[0] / "hash-cache-v1")) << "the hash cache lives there";
}

TEST_F(LayoutsCli, PathWithSpacesAndNonAsciiEndToEnd) {
  const fs::path parent = path("dir with spaces ü 日本");
  fs::create_directories(parent);
  fs::path venv = venvfix::testing::make_scenario("seed", parent);
  json report = doctor(venv, 3);
  EXPECT_EQ(report["venv"], venv.string());
  json applied = repair_and_roll_back(venv);
  EXPECT_THAT(applied, HasAction("nvidia-cudnn-cu12")) << applied.dump(2);
  if (venvfix::testing::hermetic_available()) {
    EXPECT_EQ(import_torch(venv / "bin/python").exit_code, 1);  // rolled back: broken again
  }
}

}  // namespace
}  // namespace venvfix
