// `venvfix apply` end to end on the test world: the whole story (seed -> plan -> apply
// --snapshot -> import torch -> rollback byte for byte -> apply again), pip as a peer, and every
// fault with its exit code, one clear message and a venv fingerprint identical to before.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fetch/test_server.hpp"
#include "support/commands.hpp"
#include "support/scratch_test.hpp"
#include "txn/apply_test_support.hpp"
#include "venvfix/dist/hash_cache.hpp"

namespace venvfix {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using txn::testing::expect_tree_is;
using txn::testing::fingerprint;
using venvfix::testing::CommandResult;
using venvfix::testing::Hermetic;
using venvfix::testing::import_torch;
using venvfix::testing::run_pip;

// An action as the plan document writes it.
json action_json(const plan::Action& action) {
  plan::Plan plan;
  plan.actions.push_back(action);
  return plan::to_json(plan)["actions"][0];
}

class ApplyCli : public venvfix::testing::ScratchTest {
 protected:
  ApplyCli() : ScratchTest("venvfix-apply-cli-") {}
  void TearDown() override {
    if (!m_immutable.empty()) {
      venvfix::testing::run_command({"chattr", "-i", m_immutable.string()});
    }
  }

  void start_index() {
    if (!m_index) {
      m_index.emplace(
          venvfix::testing::IndexServer::start(venvfix::testing::test_world().index_dir));
    }
  }
  std::string files_url() const {
    return "http://127.0.0.1:" + std::to_string(m_index->port()) + "/files";
  }

  // venvfix with this test's index, cache and the hermetic loader view; `hermetic`: also in the
  // hermetic mount namespace, so that dlopen in the load check sees no host CUDA either.
  CommandResult venvfix(const fs::path& venv, const std::vector<std::string>& args,
                        Hermetic hermetic = Hermetic::yes) {
    start_index();
    return venvfix::testing::run_venvfix({.index_url = m_index->url(),
                                          .cache_dir = path("cache"),
                                          .options = {m_verbosity},
                                          .hermetic = hermetic},
                                         venv, args);
  }

  fs::path plan_for(const fs::path& venv, const std::string& name = "plan.json") {
    CommandResult planned = venvfix(venv, {"plan", "-o", path(name).string()}, Hermetic::no);
    EXPECT_EQ(planned.exit_code, 3) << planned.err;
    return path(name);
  }

  json read_json(const fs::path& file) {
    auto text = read_file(file);
    EXPECT_TRUE(text);
    return json::parse(*text);
  }
  void write_json(const fs::path& file, const json& document) {
    txn::testing::write_text(file, document.dump(2) + "\n");
  }

  // Exit code, one message naming `needle`, and the venv exactly as before.
  void expect_refused(const CommandResult& result, int code, const std::string& needle,
                      const std::map<std::string, std::string>& before, const fs::path& venv) {
    EXPECT_EQ(result.exit_code, code) << result.out << result.err;
    EXPECT_THAT(result.err, HasSubstr("venvfix: error: "));
    EXPECT_THAT(result.err, HasSubstr(needle));
    EXPECT_THAT(result.err, HasSubstr("unchanged"));
    expect_tree_is(venv, before);
    EXPECT_FALSE(fs::exists(venv / ".venvfix/journal") && !fs::is_empty(venv / ".venvfix/journal"))
        << "a journal was left behind";
  }

  std::optional<venvfix::testing::IndexServer> m_index;
  fs::path m_immutable;
  std::string m_verbosity = "-q";
};

TEST_F(ApplyCli, TheWholeStory) {
  fs::path venv = scenario("seed");
  if (venvfix::testing::hermetic_available()) {
    ASSERT_NE(import_torch(venv).exit_code, 0) << "the seed must be broken";
  }
  fs::path plan = plan_for(venv);
  const auto broken = fingerprint(venv);

  CommandResult applied = venvfix(venv, {"--json", "apply", plan.string(), "--snapshot"});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  json report = json::parse(applied.out);
  EXPECT_EQ(report["schema"], "venvfix-apply/1");
  EXPECT_EQ(report["verification"]["ok"], true);
  ASSERT_TRUE(report["snapshot"].is_string()) << report.dump(2);
  EXPECT_FALSE(report["verification"]["loads"].empty());
  EXPECT_EQ(report["verification"]["probe"]["ok"], true) << report.dump(2);
  bool cudnn = false;
  for (const json& action : report["actions"]) cudnn |= action["dist"] == "nvidia-cudnn-cu12";
  EXPECT_TRUE(cudnn) << report.dump(2);
  CommandResult imported = import_torch(venv);
  EXPECT_EQ(imported.exit_code, 0) << imported.err;
  CommandResult doctor = venvfix(venv, {"doctor"}, Hermetic::no);
  EXPECT_EQ(doctor.exit_code, 0) << doctor.out << doctor.err;

  // Roll back: the broken state comes back byte for byte.
  CommandResult rolled = venvfix(venv, {"rollback", report["snapshot"].get<std::string>()});
  ASSERT_EQ(rolled.exit_code, 0) << rolled.out << rolled.err;
  expect_tree_is(venv, broken);

  // The same plan applies again (the state is the planned one), from the cache this time.
  applied = venvfix(venv, {"--json", "apply", plan.string()});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  report = json::parse(applied.out);
  for (const json& action : report["actions"]) {
    if (action["action"] == "install") {
      EXPECT_EQ(action["from_cache"], true);
    }
  }
  EXPECT_EQ(report["snapshot"], nullptr);
  EXPECT_EQ(import_torch(venv).exit_code, 0);

  // Nothing left to do now.
  applied = venvfix(venv, {"--json", "apply", "--yes"});
  EXPECT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_EQ(json::parse(applied.out)["nothing_to_do"], true);
}

// Hash each byte once: the digests staging computed seed the hash cache under the files'
// identities after the moves, so the analysis after the moves reads no installed byte.
TEST_F(ApplyCli, TheVerificationAfterTheMovesReadsNoInstalledBytes) {
  fs::path venv = scenario("seed");
  fs::path plan = plan_for(venv);
  m_verbosity = "-vv";
  CommandResult applied = venvfix(venv, {"apply", plan.string()});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  // Each analysis logs what check_files read; the last one is the verification's.
  struct Checked {
    unsigned long files = 0, hashed = 0, bytes = 0, hits = 0;
  };
  std::vector<Checked> analyses;
  for (std::size_t at = applied.err.find("checked "); at != std::string::npos;
       at = applied.err.find("checked ", at + 1)) {
    Checked c;
    if (std::sscanf(applied.err.c_str() + at,
                    "checked %lu files, hashed %lu (%lu bytes), %lu from the hash cache", &c.files,
                    &c.hashed, &c.bytes, &c.hits) == 4) {
      analyses.push_back(c);
    }
  }
  ASSERT_GE(analyses.size(), 2u) << applied.err;
  EXPECT_EQ(analyses.back().hashed, 0u) << applied.err;
  EXPECT_EQ(analyses.back().bytes, 0u) << applied.err;
  EXPECT_GT(analyses.back().hits, 0u) << applied.err;
  EXPECT_THAT(applied.err, ::testing::ContainsRegex("seeded the hash cache with [1-9][0-9]* "));
  // What the cache remembers for each file of the venv is that file's sha256.
  dist::HashCache cache = dist::HashCache::load_for(venv / ".venvfix");
  std::size_t remembered = 0;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(venv, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (!it->is_regular_file(error) || it->is_symlink(error)) continue;
    auto identity = file_identity(it->path());
    ASSERT_TRUE(identity);
    if (auto digest = cache.lookup(*identity)) {
      ++remembered;
      EXPECT_EQ(*digest, *sha256_file(it->path())) << it->path();
    }
  }
  EXPECT_GT(remembered, 0u);
}

// A re-apply hard-links the unpacked cache's files into the venv, so the inodes a tree snapshot
// holds gain and lose links: the snapshot still restores exactly.
TEST_F(ApplyCli, ATreeSnapshotRestoresOverAReapplyFromTheUnpackedCache) {
  fs::path venv = scenario("seed");
  CommandResult applied = venvfix(venv, {"apply", "--yes"});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  CommandResult created = venvfix(venv, {"--json", "snapshot", "create"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const std::string id = json::parse(created.out)["id"];
  const auto healthy = fingerprint(venv);

  auto pip = run_pip(venv, {"uninstall", "-y", "nvidia-cudnn-cu12"});
  ASSERT_EQ(pip.exit_code, 0) << pip.err;
  applied = venvfix(venv, {"--json", "apply", "--yes"});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  json report = json::parse(applied.out);
  ASSERT_FALSE(report["actions"].empty()) << report.dump(2);
  for (const json& action : report["actions"]) EXPECT_EQ(action["from_cache"], true);

  CommandResult rolled = venvfix(venv, {"rollback", id});
  ASSERT_EQ(rolled.exit_code, 0) << rolled.out << rolled.err;
  expect_tree_is(venv, healthy);
}

// A re-apply from the unpacked cache installs the bytes the first apply loaded: their verdicts
// are kept under the download cache and stand in for the loads, and the report says so;
// --recheck-loads loads them again.
TEST_F(ApplyCli, AReapplyTrustsKeptLoadVerdictsUnlessToldToRecheck) {
  fs::path venv = scenario("seed");
  CommandResult applied = venvfix(venv, {"--json", "apply", "--yes"});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  const json first = json::parse(applied.out)["verification"]["loads"];
  ASSERT_FALSE(first.empty());
  for (const json& load : first) EXPECT_FALSE(load.contains("proven_at")) << load.dump();
  EXPECT_TRUE(fs::is_directory(path("cache/load-verdicts-v1")));

  auto proven_earlier = [](const json& loads) {
    std::size_t count = 0;
    for (const json& load : loads) count += load.contains("proven_at") ? 1 : 0;
    return count;
  };
  ASSERT_EQ(run_pip(venv, {"uninstall", "-y", "nvidia-cudnn-cu12"}).exit_code, 0);
  applied = venvfix(venv, {"apply", "--yes"});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  // Every library that loaded was proven earlier; a needs-python one says so on its own line.
  const auto summary = applied.out.find("verified: ");
  ASSERT_NE(summary, std::string::npos) << applied.out;
  unsigned loaded = 0, total = 0, kept = 0;
  ASSERT_EQ(std::sscanf(applied.out.c_str() + summary,
                        "verified: %u of %u libraries loaded in a child process (%u of them by an "
                        "earlier check of the same bytes",
                        &loaded, &total, &kept),
            3)
      << applied.out;
  EXPECT_GT(loaded, 0u);
  EXPECT_EQ(kept, loaded);
  EXPECT_THAT(applied.out, HasSubstr(") (an earlier check's verdict, kept)"));
  ASSERT_EQ(run_pip(venv, {"uninstall", "-y", "nvidia-cudnn-cu12"}).exit_code, 0);
  applied = venvfix(venv, {"--json", "apply", "--yes"});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  const json second = json::parse(applied.out)["verification"]["loads"];
  EXPECT_EQ(second.size(), first.size());
  // Every one that loaded; a driver-missing one (libcaffe2_nvrtc.so here) is loaded again.
  for (const json& load : second) {
    EXPECT_EQ(load.contains("proven_at"), load["status"] != "driver-missing") << load.dump();
  }
  EXPECT_GT(proven_earlier(second), 0u);

  ASSERT_EQ(run_pip(venv, {"uninstall", "-y", "nvidia-cudnn-cu12"}).exit_code, 0);
  applied = venvfix(venv, {"--json", "apply", "--yes", "--recheck-loads"});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  const json third = json::parse(applied.out)["verification"]["loads"];
  EXPECT_EQ(third.size(), first.size());
  EXPECT_EQ(proven_earlier(third), 0u) << third.dump(2);
}

TEST_F(ApplyCli, PipTreatsWhatVenvfixInstalledAsItsOwn) {
  fs::path venv = scenario("seed");
  CommandResult applied = venvfix(venv, {"apply", "--yes"});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  EXPECT_THAT(applied.out, HasSubstr("installed nvidia-cudnn-cu12"));
  auto show = run_pip(venv, {"show", "-f", "nvidia-cudnn-cu12"});
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr("nvidia/cudnn/lib/libcudnn.so.9"));
  EXPECT_THAT(show.out, HasSubstr("Version: 9.10.2.21"));
  auto check = run_pip(venv, {"check"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  auto uninstall = run_pip(venv, {"uninstall", "-y", "nvidia-cudnn-cu12"});
  EXPECT_EQ(uninstall.exit_code, 0) << uninstall.err;
  auto list = run_pip(venv, {"list"});
  EXPECT_THAT(list.out, ::testing::Not(HasSubstr("nvidia-cudnn-cu12")));
  std::size_t left = 0;
  for (const auto& [rel, value] : fingerprint(venv)) {
    left += rel.find("nvidia/cudnn/lib/libcudnn") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(left, 0u) << "pip left venvfix's files behind";
}

TEST_F(ApplyCli, DownloadFaultsChangeNothing) {
  fs::path venv = scenario("seed");
  fs::path plan = plan_for(venv);
  const auto before = fingerprint(venv);
  json document = read_json(plan);
  ASSERT_FALSE(document["actions"].empty());

  json wrong_hash = document;
  wrong_hash["actions"][0]["sha256"] = std::string(64, '0');
  write_json(path("wrong-hash.json"), wrong_hash);
  expect_refused(venvfix(venv, {"apply", path("wrong-hash.json").string()}), 4,
                 wrong_hash["actions"][0]["file"].get<std::string>(), before, venv);

  // An index that answers 500 (to every retry): exit 4 naming the URL.
  venvfix::testing::TestServer faults("fault_server.py", venvfix::testing::test_world().index_dir);
  ASSERT_TRUE(faults.running());
  json failing = document;
  const std::string file = failing["actions"][0]["file"].get<std::string>();
  failing["actions"][0]["url"] = faults.url("/fault/500/1000/files/" + file);
  write_json(path("500.json"), failing);
  expect_refused(venvfix(venv, {"apply", path("500.json").string()}), 4, "500", before, venv);
}

TEST_F(ApplyCli, VerificationFaultsRollBack) {
  fs::path venv = scenario("seed");
  fs::path plan = plan_for(venv);
  const auto before = fingerprint(venv);

  // --verify-cmd failing.
  expect_refused(venvfix(venv, {"apply", plan.string(), "--verify-cmd", "echo no torch; exit 3"}),
                 5, "--verify-cmd", before, venv);

  // The probe, the last step, failing: `import torch` works, the statement after it raises.
  expect_refused(
      venvfix(venv, {"apply", plan.string(), "--probe-cmd",
                     "import torch\nraise RuntimeError('venvfix test: the probe says no')"}),
      5, "the probe says no", before, venv);

  // A wheel whose library does not load (its DT_NEEDED exists nowhere).
  fs::path tree = path("broken-tree");
  txn::testing::compile_with_missing_needed(tree / "venvfix_broken/libbroken.so.1",
                                            "libbroken.so.1", "libvenvfix_absent.so.7");
  txn::testing::write_text(tree / "venvfix_broken/__init__.py", "");
  auto wheel = txn::testing::make_wheel(path("wheels"), "venvfix-broken", "1.0", tree);
  json document = read_json(plan);
  document["actions"].push_back(action_json(txn::testing::install_action(
      "venvfix-broken", "1.0", wheel, txn::testing::file_url(wheel.path))));
  write_json(path("broken.json"), document);
  expect_refused(venvfix(venv, {"apply", path("broken.json").string()}), 5, "libbroken.so.1",
                 before, venv);
}

TEST_F(ApplyCli, StateLockAndFilesystemFaultsChangeNothing) {
  fs::path venv = scenario("seed");
  fs::path plan = plan_for(venv);

  // Another venvfix holds the lock.
  {
    fs::create_directories(venv / ".venvfix");
    int fd = ::open((venv / ".venvfix/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::flock(fd, LOCK_EX), 0);
    const auto before = fingerprint(venv);
    CommandResult locked = venvfix(venv, {"apply", plan.string()});
    EXPECT_EQ(locked.exit_code, 6) << locked.err;
    EXPECT_THAT(locked.err, HasSubstr(venv.string()));
    EXPECT_EQ(fingerprint(venv), before);
    ::close(fd);
  }

  // A read-only (immutable) file in the way: the move fails, everything is rolled back.
  const auto before = fingerprint(venv);
  fs::path metadata;
  for (const auto& [rel, value] : before) {
    if (rel.find("nvidia_cudnn_cu12-9.10.2.21.dist-info/METADATA") != std::string::npos) {
      metadata = venv / rel;
    }
  }
  ASSERT_FALSE(metadata.empty());
  if (venvfix::testing::run_command({"chattr", "+i", metadata.string()}).exit_code == 0) {
    m_immutable = metadata;
    expect_refused(venvfix(venv, {"apply", plan.string()}), 1, "METADATA", before, venv);
    venvfix::testing::run_command({"chattr", "-i", metadata.string()});
    m_immutable.clear();
  }

  // The venv changed since planning: exit 7.
  auto pip = venvfix::testing::run_command(
      {(venv / "bin/python").string(), "-m", "pip", "uninstall", "-y", "nvidia-cublas"},
      {{"PIP_DISABLE_PIP_VERSION_CHECK", "1"}}, 120);
  ASSERT_EQ(pip.exit_code, 0) << pip.err;
  const auto changed = fingerprint(venv);
  expect_refused(venvfix(venv, {"apply", plan.string()}), 7, "changed since planning", changed,
                 venv);
}

TEST_F(ApplyCli, AHostileWheelIsRefusedEndToEnd) {
  fs::path venv = scenario("seed");
  fs::path plan = plan_for(venv);
  const auto before = fingerprint(venv);
  fs::path tree = path("hostile-tree");
  txn::testing::write_text(tree / "hostile/__init__.py", "");
  auto wheel = txn::testing::make_wheel(path("wheels"), "hostile", "1.0", tree,
                                        {"--raw", "../../../../../escaped.txt=owned"});
  json document = read_json(plan);
  document["actions"].push_back(action_json(
      txn::testing::install_action("hostile", "1.0", wheel, txn::testing::file_url(wheel.path))));
  write_json(path("hostile.json"), document);
  expect_refused(venvfix(venv, {"apply", path("hostile.json").string()}), 2, "escaped.txt", before,
                 venv);
  EXPECT_FALSE(fs::exists(venv.parent_path() / "escaped.txt"));
  EXPECT_FALSE(fs::exists(m_dir->path() / "escaped.txt"));
}

}  // namespace
}  // namespace venvfix
