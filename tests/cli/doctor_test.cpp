// `venvfix doctor` and `venvfix why` end to end: the real binary on pip-made scenario venvs of
// the test world, with the loader's view of the system controlled by the test (a cache
// without the host's CUDA directory), and once with the host's own view.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>
#include <string>

#include "support/paths.hpp"
#include "support/scratch_test.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

struct DoctorRun {
  int exit_code = -1;
  json document;
  std::string err;
};

enum class View { hermetic, host };

DoctorRun run_venvfix(const fs::path& venv, std::vector<std::string> args, View view) {
  const auto& world = venvfix::testing::test_world();
  std::vector<std::string> argv = {venvfix::testing::venvfix_binary(), "--venv", venv.string(),
                                   "--json"};
  if (view == View::hermetic) {
    argv.push_back("--ld-cache");
    argv.push_back(world.hermetic_cache.string());
  }
  argv.insert(argv.end(), args.begin(), args.end());
  auto result = venvfix::testing::run_command(argv, {{"LD_LIBRARY_PATH", ""}}, 120);
  DoctorRun run{result.exit_code, json::parse(result.out, nullptr, false), result.err};
  EXPECT_FALSE(run.document.is_discarded()) << "stdout is not JSON:\n" << result.out << result.err;
  return run;
}

// "kind dist-or-soname severity" for each finding: compact, order-free comparison.
std::multiset<std::string> summary(const json& document) {
  std::multiset<std::string> out;
  for (const json& f : document["findings"]) {
    std::string key = f.value("dist", f.value("soname", std::string()));
    out.insert(f["kind"].get<std::string>() + " " + key + " " + f["severity"].get<std::string>());
  }
  return out;
}

const json* find(const json& document, std::string_view kind, std::string_view key) {
  for (const json& f : document["findings"]) {
    if (f["kind"] == kind && (f.value("dist", "") == key || f.value("soname", "") == key)) {
      return &f;
    }
  }
  return nullptr;
}

class Doctor : public venvfix::testing::ScratchTest {
 protected:
  Doctor() : ScratchTest("venvfix-doctor-test-") {}
};

TEST_F(Doctor, HealthyVenvHasNoFindings) {
  DoctorRun run = run_venvfix(scenario("healthy"), {"doctor"}, View::hermetic);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.document["schema"], "venvfix-doctor/1");
  EXPECT_EQ(run.document["targets"], json::array({"torch"}));
  EXPECT_EQ(run.document["target_details"][0]["cuda_major"], 12);
  EXPECT_TRUE(run.document["findings"].empty()) << run.document.dump(2);
  // This host has no GPU driver: libcuda.so.1 is a note, never a finding.
  for (const json& note : run.document["notes"]) EXPECT_EQ(note["provided_by"], "driver");
}

TEST_F(Doctor, SeedShowsTheGhostAndTheMissingSoname) {
  DoctorRun run = run_venvfix(scenario("seed"), {"doctor"}, View::hermetic);
  EXPECT_EQ(run.exit_code, 3) << run.err;
  EXPECT_THAT(summary(run.document),
              UnorderedElementsAre("ghost-files nvidia-cudnn-cu12 problem",
                                   "unresolved-soname libcudnn.so.9 problem",
                                   // pip pulled it in with nvidia-cudnn-cu13 and left it
                                   "cuda-mix nvidia-cublas warning"))
      << run.document.dump(2);
  const json* ghost = find(run.document, "ghost-files", "nvidia-cudnn-cu12");
  ASSERT_NE(ghost, nullptr);
  EXPECT_THAT(ghost->at("missing").get<std::vector<std::string>>(),
              Contains("nvidia/cudnn/lib/libcudnn.so.9"));
  EXPECT_THAT(ghost->at("message").get<std::string>(), ::testing::HasSubstr("in name only"));
  const json* unresolved = find(run.document, "unresolved-soname", "libcudnn.so.9");
  ASSERT_NE(unresolved, nullptr);
  EXPECT_THAT(unresolved->at("needed_by").get<std::vector<std::string>>(),
              Contains("torch/lib/libtorch_cuda.so"));
}

TEST_F(Doctor, SeedOnTheHostReportsTheEscape) {
  if (!fs::exists("/usr/local/cuda-13.0/lib/libcudnn.so.9")) {
    GTEST_SKIP() << "this host has no system cuDNN in its loader cache";
  }
  DoctorRun run = run_venvfix(scenario("seed"), {"doctor"}, View::host);
  EXPECT_EQ(run.exit_code, 3) << run.err;
  const json* escaped = find(run.document, "escaped-soname", "libcudnn.so.9");
  ASSERT_NE(escaped, nullptr) << run.document.dump(2);
  EXPECT_EQ(escaped->at("resolved_to"), "/usr/local/cuda-13.0/lib/libcudnn.so.9");
  EXPECT_NE(find(run.document, "ghost-files", "nvidia-cudnn-cu12"), nullptr);
}

TEST_F(Doctor, ClobberedCudnnIsSeenByHash) {
  DoctorRun run = run_venvfix(scenario("clobbered"), {"doctor"}, View::hermetic);
  EXPECT_EQ(run.exit_code, 3) << run.err;
  const json* clobbered = find(run.document, "clobbered-files", "nvidia-cudnn-cu13");
  ASSERT_NE(clobbered, nullptr) << run.document.dump(2);
  EXPECT_EQ(clobbered->at("severity"), "problem");
  EXPECT_THAT(clobbered->at("dists").get<std::vector<std::string>>(),
              ElementsAre("nvidia-cudnn-cu12"));
  EXPECT_THAT(clobbered->at("paths").get<std::vector<std::string>>(),
              Contains("nvidia/cudnn/lib/libcudnn.so.9"));
  const json* mix = find(run.document, "cuda-mix", "nvidia-cudnn-cu12");
  ASSERT_NE(mix, nullptr);
  EXPECT_EQ(mix->at("conflicts"), true);
  EXPECT_EQ(mix->at("severity"), "problem");
}

TEST_F(Doctor, KilledInstallLeavesAGhostLibrary) {
  DoctorRun run = run_venvfix(scenario("killed-install"), {"doctor"}, View::hermetic);
  EXPECT_EQ(run.exit_code, 3) << run.err;
  // torch 2.8.0+cu128 preloads only nvrtc and nvJitLink after a successful load
  // (manifests/torch.json), so libcublas.so.12 is reached through torch's RPATH and only its
  // own need is missing.
  EXPECT_THAT(summary(run.document),
              UnorderedElementsAre("ghost-files nvidia-cublas-cu12 problem",
                                   "unresolved-soname libcublasLt.so.12 problem"))
      << run.document.dump(2);
  const json* ghost = find(run.document, "ghost-files", "nvidia-cublas-cu12");
  ASSERT_NE(ghost, nullptr);
  // One library gone out of several: damaged, not "in name only".
  EXPECT_THAT(ghost->at("message").get<std::string>(), ::testing::HasSubstr("but damaged"));
}

TEST_F(Doctor, VenvWithoutPipIsDiagnosedAlike) {
  DoctorRun run = run_venvfix(scenario("no-pip"), {"doctor"}, View::hermetic);
  EXPECT_EQ(run.exit_code, 0) << run.err << run.document.dump(2);
}

TEST_F(Doctor, SplitSitePackagesIsAProblem) {
  DoctorRun run = run_venvfix(scenario("split-lib64"), {"doctor"}, View::hermetic);
  EXPECT_EQ(run.exit_code, 3) << run.err;
  const json* split = find(run.document, "split-site-packages", "torch");
  ASSERT_NE(split, nullptr) << run.document.dump(2);
  EXPECT_EQ(split->at("severity"), "problem");
}

TEST_F(Doctor, CudaThirteenBesideCu128Torch) {
  DoctorRun run = run_venvfix(scenario("cuda-mix"), {"doctor"}, View::hermetic);
  EXPECT_EQ(run.exit_code, 3) << run.err;
  const json* nccl = find(run.document, "cuda-mix", "nvidia-nccl-cu13");
  ASSERT_NE(nccl, nullptr) << run.document.dump(2);
  EXPECT_EQ(nccl->at("conflicts"), true);
  EXPECT_EQ(nccl->at("target_cuda_major"), 12);
  const json* cublas13 = find(run.document, "cuda-mix", "nvidia-cublas");
  ASSERT_NE(cublas13, nullptr);
  EXPECT_EQ(cublas13->at("conflicts"), false);
  EXPECT_EQ(cublas13->at("severity"), "warning");
}

TEST_F(Doctor, EveryNvidiaDistributionRemoved) {
  DoctorRun run = run_venvfix(scenario("all-nvidia-removed"), {"doctor"}, View::hermetic);
  EXPECT_EQ(run.exit_code, 3) << run.err;
  const json* unmet = find(run.document, "unmet-requirement", "nvidia-cudnn-cu12");
  ASSERT_NE(unmet, nullptr) << run.document.dump(2);
  EXPECT_EQ(unmet->at("severity"), "problem");
  EXPECT_EQ(unmet->at("required_by"), "torch");
  EXPECT_NE(find(run.document, "unresolved-soname", "libcudnn.so.9"), nullptr);
}

TEST_F(Doctor, Torch211PinsThroughCudaToolkitExtras) {
  DoctorRun run = run_venvfix(scenario("torch211-cu130"), {"doctor"}, View::hermetic);
  EXPECT_EQ(run.exit_code, 0) << run.err << run.document.dump(2);
}

TEST_F(Doctor, WhyExplainsWhereTheLoaderLooks) {
  DoctorRun run = run_venvfix(scenario("seed"), {"why", "libcudnn.so.9"}, View::hermetic);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.document["schema"], "venvfix-why/1");
  bool torch_cuda_seen = false;
  for (const json& consumer : run.document["needed_by"]) {
    if (consumer["consumer"] != "torch/lib/libtorch_cuda.so") continue;
    torch_cuda_seen = true;
    EXPECT_EQ(consumer["found"], false);
    auto searched = consumer["searched"].get<std::vector<std::string>>();
    EXPECT_TRUE(std::any_of(searched.begin(), searched.end(), [](const std::string& dir) {
      return dir.find("nvidia/cudnn/lib") != std::string::npos;
    })) << consumer.dump(2);
  }
  EXPECT_TRUE(torch_cuda_seen) << run.document.dump(2);
  ASSERT_FALSE(run.document["providers"].empty());
  EXPECT_EQ(run.document["providers"][0]["dist"], "nvidia-cudnn-cu12");
  EXPECT_EQ(run.document["providers"][0]["present"], false);
}

TEST_F(Doctor, SecondRunReadsNoLibraryBytes) {
  fs::path venv = settled_scenario("healthy");
  DoctorRun first = run_venvfix(venv, {"doctor"}, View::hermetic);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(fs::exists(venv / ".venvfix" / "hash-cache-v1"));
  DoctorRun second = run_venvfix(venv, {"-vv", "doctor"}, View::hermetic);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.err, ::testing::HasSubstr("hashed 0 (0 bytes)"));
}

// --probe: the venv's own `import torch` beside the static report (tests/verify/probe_test.cpp
// covers the findings; here the command line, the document and the exit code).
TEST_F(Doctor, ProbeOnTheSeedFailsWithTheLoadersMessage) {
  if (!venvfix::testing::hermetic_available()) GTEST_SKIP() << "needs root and unshare";
  DoctorRun run = run_venvfix(scenario("seed"), {"doctor", "--probe"}, View::hermetic);
  EXPECT_EQ(run.exit_code, 3) << run.err;
  ASSERT_TRUE(run.document.contains("probe")) << run.document.dump(2);
  const json& probe = run.document["probe"];
  EXPECT_EQ(probe["ok"], false);
  EXPECT_EQ(probe["statement"], "import torch");
  EXPECT_THAT(probe["error"].get<std::string>(),
              ::testing::HasSubstr("libcudnn.so.9: cannot open shared object file"));
  ASSERT_FALSE(probe["findings"].empty());
  EXPECT_EQ(probe["findings"][0]["kind"], "import-failed");
  EXPECT_EQ(probe["findings"][0]["severity"], "problem");
  EXPECT_THAT(probe["loader_view"].get<std::string>(), ::testing::HasSubstr("mount namespace"));
}

TEST_F(Doctor, ProbeOnAHealthyVenvAgreesWithTheStaticAnswer) {
  if (!venvfix::testing::hermetic_available()) GTEST_SKIP() << "needs root and unshare";
  fs::path venv = scenario("healthy");
  DoctorRun run = run_venvfix(venv, {"doctor", "--probe"}, View::hermetic);
  EXPECT_EQ(run.exit_code, 0) << run.document.dump(2) << run.err;
  const json& probe = run.document["probe"];
  EXPECT_EQ(probe["ok"], true);
  EXPECT_TRUE(probe["findings"].empty()) << probe["findings"].dump(2);
  bool cudnn = false;
  for (const json& library : probe["loaded"]) {
    if (library["soname"] == "libcudnn.so.9") {
      cudnn = true;
      EXPECT_EQ(library["inside_venv"], true);
      EXPECT_EQ(library["dists"], json::array({"nvidia-cudnn-cu12"}));
    }
  }
  EXPECT_TRUE(cudnn) << probe.dump(2);

  // Without --probe, no probe; --probe-cmd runs another statement; a failing one is exit 3.
  DoctorRun plain = run_venvfix(venv, {"doctor"}, View::hermetic);
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_FALSE(plain.document.contains("probe"));
  DoctorRun failing =
      run_venvfix(venv, {"doctor", "--probe-cmd", "import venvfix_no_such_module"}, View::hermetic);
  EXPECT_EQ(failing.exit_code, 3);
  EXPECT_THAT(failing.document["probe"]["error"].get<std::string>(),
              ::testing::HasSubstr("No module named 'venvfix_no_such_module'"));
}

TEST(DoctorErrors, NotAVenvIsBadUsage) {
  auto dir = TempDir::create("venvfix-not-a-venv-");
  ASSERT_TRUE(dir);
  auto result = venvfix::testing::run_command(
      {venvfix::testing::venvfix_binary(), "--venv", dir->path().string(), "doctor"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, ::testing::HasSubstr(dir->path().string()));
}

TEST(DoctorErrors, UnknownFlagIsBadUsage) {
  auto result = venvfix::testing::run_command(
      {venvfix::testing::venvfix_binary(), "doctor", "--no-such-flag"});
  EXPECT_EQ(result.exit_code, 2);
}

TEST(DoctorErrors, JsonErrorDocumentOnFailure) {
  auto result = venvfix::testing::run_command(
      {venvfix::testing::venvfix_binary(), "--json", "--venv", "/nonexistent/venv", "doctor"});
  EXPECT_EQ(result.exit_code, 2);
  json document = json::parse(result.out, nullptr, false);
  ASSERT_FALSE(document.is_discarded()) << result.out;
  EXPECT_EQ(document["schema"], "venvfix-error/1");
  EXPECT_EQ(document["exit_code"], 2);
}

}  // namespace
}  // namespace venvfix
