// doctor against the real loader on venvs the manifests do not describe (tests/world/variants.py):
// a torch build manifests/torch.json does not list, stand-ins that do and do not preload after
// import, a cuDNN without DT_RUNPATH. The judge is the venv's own python importing torch (and
// opening cuDNN's sub-libraries as its first use does) in the hermetic view. The contract: a
// problem means the real load fails; a real failure is named by a problem or a warning; a venv
// that really loads shows no problem.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "support/paths.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix {
namespace {

using nlohmann::json;

struct Reality {
  bool loads = false;
  std::string soname;  // the one the loader could not find
  std::string message;
};

// The venv's own interpreter imports torch and uses its CUDA libraries, in the hermetic view.
Reality real_load(const fs::path& venv) {
  const auto& world = venvfix::testing::test_world();
  auto result = venvfix::testing::run_command(
      {venvfix::testing::hermetic_runner().string(), world.hermetic_cache.string(), "--", "env",
       "-i", (venv / "bin/python").string(), "-c",
       "import torch; torch._venvfix_use_cuda_libraries()"},
      {}, 120);
  Reality reality;
  reality.loads = result.exit_code == 0;
  reality.message = result.err;
  // "...: libcudnn.so.9: cannot open shared object file": the word before the loader's text.
  std::size_t at = result.err.find(": cannot open shared object file");
  if (at != std::string::npos) {
    std::size_t start = result.err.find_last_of(" \n'\"", at);
    start = start == std::string::npos ? 0 : start + 1;
    reality.soname = result.err.substr(start, at - start);
  }
  return reality;
}

struct Doctor {
  int exit_code = -1;
  json document;
};

Doctor doctor(const fs::path& venv, const std::vector<std::string>& args = {"doctor"}) {
  const auto& world = venvfix::testing::test_world();
  std::vector<std::string> argv = {
      venvfix::testing::venvfix_binary(), "--venv", venv.string(), "--json", "--ld-cache",
      world.hermetic_cache.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto result = venvfix::testing::run_command(argv, {{"LD_LIBRARY_PATH", ""}}, 120);
  Doctor run{result.exit_code, json::parse(result.out, nullptr, false)};
  EXPECT_FALSE(run.document.is_discarded()) << result.out << result.err;
  return run;
}

std::vector<json> findings_about(const json& document, const std::string& soname) {
  std::vector<json> out;
  for (const json& f : document["findings"]) {
    std::vector<std::string> grouped = f.value("sonames", std::vector<std::string>());
    if (f.value("soname", "") == soname ||
        std::find(grouped.begin(), grouped.end(), soname) != grouped.end()) {
      out.push_back(f);
    }
  }
  return out;
}

bool has_problem(const json& document) {
  for (const json& f : document["findings"]) {
    if (f["severity"] == "problem") return true;
  }
  return false;
}

class LoadWays : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!venvfix::testing::hermetic_available()) GTEST_SKIP() << "needs root and unshare -m";
    auto dir = TempDir::create("venvfix-load-ways-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
  }
  fs::path scenario(std::string_view name) {
    return venvfix::testing::make_scenario(name, m_dir->path());
  }
  std::optional<TempDir> m_dir;
};

TEST_P(LoadWays, DoctorAgreesWithTheRealLoader) {
  fs::path venv = scenario(GetParam());
  Reality reality = real_load(venv);
  Doctor run = doctor(venv);
  SCOPED_TRACE(run.document.dump(2));
  SCOPED_TRACE("the real load: " + (reality.loads ? std::string("ok") : reality.message));
  if (reality.loads) {
    EXPECT_FALSE(has_problem(run.document)) << "a problem on a venv whose torch really loads";
    EXPECT_EQ(run.exit_code, 0);
  } else {
    ASSERT_FALSE(reality.soname.empty()) << "the real failure names no soname";
    EXPECT_FALSE(findings_about(run.document, reality.soname).empty())
        << "the real failure (" << reality.soname << ") is in no finding";
  }
  if (has_problem(run.document)) {
    EXPECT_FALSE(reality.loads);
    EXPECT_EQ(run.exit_code, 3);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, LoadWays,
                         ::testing::Values("healthy", "seed", "unlisted-preload-all",
                                           "unlisted-preload-none",
                                           "unlisted-preload-all-norunpath",
                                           "unlisted-preload-none-norunpath", "unlisted-seed"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

TEST_F(LoadWays, AListedBuildIsResolvedTheWayTheManifestsRecordAndShowsNothing) {
  Doctor run = doctor(scenario("healthy"));
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_TRUE(run.document["findings"].empty()) << run.document.dump(2);
  EXPECT_TRUE(run.document["assumptions"].empty()) << run.document.dump(2);
}

TEST_F(LoadWays, AnUnlistedBuildSaysWhatItAssumedAndWarnsOnlyWhereAWayFails) {
  Doctor run = doctor(scenario("unlisted-preload-all"));
  ASSERT_EQ(run.document["assumptions"].size(), 1u) << run.document.dump(2);
  EXPECT_THAT(run.document["assumptions"][0].get<std::string>(),
              ::testing::HasSubstr("torch 2.9.1+cu128"));
  // cuSPARSE finds nvJitLink only when torch preloads it: its RUNPATH is $ORIGIN and torch's
  // cu12 RPATH has no nvjitlink entry.
  std::vector<json> jitlink = findings_about(run.document, "libnvJitLink.so.12");
  ASSERT_EQ(jitlink.size(), 1u) << run.document.dump(2);
  EXPECT_EQ(jitlink[0]["severity"], "warning");
  EXPECT_THAT(jitlink[0]["fails_when"].get<std::vector<std::string>>(),
              ::testing::ElementsAre("torch preloads nothing after import"));
  EXPECT_FALSE(has_problem(run.document));
  EXPECT_EQ(run.exit_code, 0);
}

TEST_F(LoadWays, ACudnnWithoutRunpathFailsOnEveryWay) {
  Doctor run = doctor(scenario("unlisted-preload-all-norunpath"));
  // Preloaded by path, libcudnn.so.9 has no loader whose RPATH would find its sub-libraries:
  // they fail on that way only.
  std::vector<json> adv = findings_about(run.document, "libcudnn_adv.so.9");
  ASSERT_FALSE(adv.empty()) << run.document.dump(2);
  const json& warning = adv.back();
  EXPECT_EQ(warning["severity"], "warning");
  EXPECT_THAT(warning["fails_when"].get<std::vector<std::string>>(),
              ::testing::ElementsAre("torch preloads the whole table after import"));
  EXPECT_THAT(warning["sonames"].get<std::vector<std::string>>(),
              ::testing::Contains("libcudnn_ops.so.9"));
  // Reached through libtorch_cuda.so, it finds them, but a library opened with dlopen inherits
  // no RPATH for its own needs (glibc, checked by ElfDifferential): without DT_RUNPATH the
  // sub-libraries cannot find libcudnn_graph.so.9 on any way.
  bool graph_problem = false;
  for (const json& f : findings_about(run.document, "libcudnn_graph.so.9")) {
    graph_problem = graph_problem || f["severity"] == "problem";
  }
  EXPECT_TRUE(graph_problem) << run.document.dump(2);
  EXPECT_EQ(run.exit_code, 3);
}

TEST_F(LoadWays, ACudaMixFindingSaysWhatRemovingItThePipWayBreaksAndRealPipAgrees) {
  fs::path venv = scenario("dual-cudnn");
  Doctor before = doctor(venv);
  const json* mix = nullptr;
  for (const json& f : before.document["findings"]) {
    if (f["kind"] == "cuda-mix" && f["dist"] == "nvidia-cudnn-cu13") mix = &f;
  }
  ASSERT_NE(mix, nullptr) << before.document.dump(2);
  EXPECT_TRUE((*mix)["conflicts"].get<bool>());
  std::vector<std::string> breaks = (*mix)["breaks"].get<std::vector<std::string>>();
  EXPECT_THAT(breaks, ::testing::Contains("libcudnn.so.9"));
  EXPECT_THAT((*mix)["message"].get<std::string>(),
              ::testing::HasSubstr("removing it with pip would delete nvidia/cudnn/lib/"
                                   "libcudnn.so.9"));
  EXPECT_THAT((*mix)["message"].get<std::string>(),
              ::testing::HasSubstr("nvidia-cudnn-cu12 lists it too"));

  // why names every distribution whose removal would take the soname.
  Doctor why = doctor(venv, {"why", "libcudnn.so.9"});
  EXPECT_THAT(why.document["removal_takes"].get<std::vector<std::string>>(),
              ::testing::UnorderedElementsAre("nvidia-cudnn-cu12", "nvidia-cudnn-cu13"));

  // The real pip is the judge of the prediction: what its uninstall leaves unresolved.
  auto pip = venvfix::testing::run_command(
      {(venv / "bin/python").string(), "-m", "pip", "uninstall", "-y", "nvidia-cudnn-cu13"},
      {{"PIP_DISABLE_PIP_VERSION_CHECK", "1"}}, 120);
  ASSERT_EQ(pip.exit_code, 0) << pip.err;
  Doctor after = doctor(venv);
  std::set<std::string> unresolved;
  for (const json& f : after.document["findings"]) {
    if (f["kind"] == "unresolved-soname" && f["severity"] == "problem") {
      unresolved.insert(f["soname"].get<std::string>());
    }
  }
  EXPECT_EQ(unresolved, std::set<std::string>(breaks.begin(), breaks.end()))
      << after.document.dump(2);
}

TEST_F(LoadWays, OnlyAForeignDistributionSharingTheTargetsFilesBreaksSomething) {
  Doctor run = doctor(scenario("cuda-mix"));
  std::map<std::string, std::vector<std::string>> breaks;
  for (const json& f : run.document["findings"]) {
    if (f["kind"] != "cuda-mix") continue;
    ASSERT_TRUE(f.contains("breaks")) << f.dump();
    breaks[f["dist"]] = f["breaks"].get<std::vector<std::string>>();
    if (!f["conflicts"].get<bool>()) {
      EXPECT_TRUE(breaks[f["dist"]].empty()) << f.dump();
    }
  }
  // nccl-cu13 wrote over nccl-cu12's nvidia/nccl/lib/libnccl.so.2; cublas and cudart 13 live
  // in nvidia/cu13/lib, which nothing of the cu128 torch loads.
  EXPECT_THAT(breaks["nvidia-nccl-cu13"], ::testing::ElementsAre("libnccl.so.2"));
  EXPECT_THAT(breaks["nvidia-cublas"], ::testing::IsEmpty());
  EXPECT_THAT(breaks["nvidia-cuda-runtime"], ::testing::IsEmpty());
}

}  // namespace
}  // namespace venvfix
