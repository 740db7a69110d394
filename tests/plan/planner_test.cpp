// The planner on every scenario of the test world, with the world's index on loopback and the
// hermetic loader view: the exact plan each one must get.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "elf/elf_test_support.hpp"
#include "plan/plan_test_support.hpp"
#include "support/commands.hpp"
#include "support/scratch_test.hpp"

namespace venvfix::plan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace venvfix::plan::testing;

class PlanMake : public venvfix::testing::ScratchTest {
 protected:
  PlanMake() : ScratchTest("venvfix-plan-test-") {}
  // (scenario(): a copy of its own, for a test that changes the venv.)
  Plan plan(const fs::path& venv, const PlanOptions& options = {},
            std::vector<std::string> targets = {}) {
    return plan_venv(venv, {world_index_url()}, path("cache"), options, std::move(targets));
  }
  // pip, as users run it, from the world's index.
  static void pip_install(const fs::path& venv, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"install", "-q", "--index-url", world_index_url()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = venvfix::testing::run_pip(venv, argv);
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }
  static void pip_uninstall(const fs::path& venv, const std::vector<std::string>& names) {
    std::vector<std::string> argv = {"uninstall", "-q", "-y"};
    argv.insert(argv.end(), names.begin(), names.end());
    auto result = venvfix::testing::run_pip(venv, argv);
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }
};

const Action* find_action(const Plan& plan, std::string_view dist) {
  for (const Action& action : plan.actions) {
    if (dist_of(action) == dist) return &action;
  }
  return nullptr;
}

TEST_F(PlanMake, HealthyVenvNeedsNothing) {
  Plan made = plan(shared_scenario("healthy"));
  EXPECT_THAT(made.actions, IsEmpty());
  EXPECT_THAT(made.unresolved, IsEmpty()) << dump(made.unresolved);
  EXPECT_EQ(made.targets, std::vector<std::string>{"torch"});
  EXPECT_EQ(made.state.size(), 64u);
}

TEST_F(PlanMake, SeedGetsTorchsCudnnPinNotTheNewest) {
  Plan made = plan(shared_scenario("seed"));
  // The index also has nvidia-cudnn-cu12 9.22.0.52; torch pins 9.10.2.21.
  ASSERT_THAT(summary(made), ElementsAre("install nvidia-cudnn-cu12 9.10.2.21 pin"));
  const Install& action = install_at(made, 0);
  EXPECT_EQ(action.file, "nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl");
  EXPECT_EQ(action.url,
            world_index_url().substr(0, world_index_url().size() - 7) + "/files/" + action.file);
  auto digest = sha256_file(venvfix::testing::test_world().wheels_dir / action.file);
  ASSERT_TRUE(digest);
  EXPECT_EQ(action.sha256, to_hex(*digest));
  EXPECT_EQ(action.size, fs::file_size(venvfix::testing::test_world().wheels_dir / action.file));
  ASSERT_TRUE(action.replaces);
  EXPECT_EQ(action.replaces->version, "9.10.2.21");
  EXPECT_THAT(action.provides, ::testing::Contains("libcudnn.so.9"));
  EXPECT_THAT(action.provides, ::testing::Contains("libcudnn_ops.so.9"));
  EXPECT_THAT(action.reason, HasSubstr("restores libcudnn.so.9 needed by torch/lib/"));
  EXPECT_THAT(action.reason, HasSubstr("torch pins nvidia-cudnn-cu12==9.10.2.21"));
  EXPECT_THAT(made.unresolved, IsEmpty()) << dump(made.unresolved);
}

TEST_F(PlanMake, ClobberedCu130GetsItsCudnnBackAndTheCu12BuildRemoved) {
  Plan made = plan(shared_scenario("clobbered"));
  ASSERT_THAT(summary(made), ElementsAre("remove nvidia-cudnn-cu12 9.10.2.21 conflicting-cuda",
                                         "install nvidia-cudnn-cu13 9.19.0.56 pin"));
  // The removal keeps every path nvidia-cudnn-cu13 also owns: the reinstall rewrites them.
  EXPECT_THAT(remove_at(made, 0).keep, ::testing::Contains("nvidia/cudnn/lib/libcudnn.so.9"));
  EXPECT_EQ(remove_at(made, 0).keep.size(), 9u);
  EXPECT_THAT(reason_of(made.actions[1]), HasSubstr("hold the bytes of nvidia-cudnn-cu12"));
  EXPECT_THAT(made.unresolved, IsEmpty()) << dump(made.unresolved);
}

TEST_F(PlanMake, EveryNvidiaDistributionRemovedGetsAllOfThemAtTorchsPins) {
  Plan made = plan(shared_scenario("all-nvidia-removed"));
  EXPECT_THAT(
      summary(made),
      ElementsAre(
          "install nvidia-cublas-cu12 12.8.4.1 pin", "install nvidia-cuda-cupti-cu12 12.8.90 pin",
          "install nvidia-cuda-nvrtc-cu12 12.8.93 pin",
          "install nvidia-cuda-runtime-cu12 12.8.90 pin", "install nvidia-cudnn-cu12 9.10.2.21 pin",
          "install nvidia-cufft-cu12 11.3.3.83 pin", "install nvidia-cufile-cu12 1.13.1.3 pin",
          "install nvidia-curand-cu12 10.3.9.90 pin", "install nvidia-cusolver-cu12 11.7.3.90 pin",
          "install nvidia-cusparse-cu12 12.5.8.93 pin", "install nvidia-cusparselt-cu12 0.7.1 pin",
          "install nvidia-nccl-cu12 2.27.3 pin", "install nvidia-nvjitlink-cu12 12.8.93 pin",
          "install nvidia-nvtx-cu12 12.8.90 pin"));
  for (const Action& action : made.actions) {
    EXPECT_FALSE(std::get<Install>(action).replaces) << dist_of(action);
  }
  EXPECT_THAT(made.unresolved, IsEmpty()) << dump(made.unresolved);
}

TEST_F(PlanMake, HandDeletedCublasLtReinstallsCublas) {
  Plan made = plan(shared_scenario("killed-install"));
  ASSERT_THAT(summary(made), ElementsAre("install nvidia-cublas-cu12 12.8.4.1 pin"));
  EXPECT_THAT(reason_of(made.actions[0]), HasSubstr("libcublasLt.so.12"));
  EXPECT_THAT(reason_of(made.actions[0]), HasSubstr("is missing"));
}

TEST_F(PlanMake, Torch211ThroughCudaToolkitExtrasIsHealthy) {
  Plan made = plan(shared_scenario("torch211-cu130"));
  EXPECT_THAT(made.actions, IsEmpty());
  EXPECT_THAT(made.unresolved, IsEmpty()) << dump(made.unresolved);
}

TEST_F(PlanMake, Torch211ComponentDeletedFollowsTheCudaToolkitPin) {
  fs::path venv = scenario("torch211-cu130");
  fs::remove(site_packages_of(venv) / "nvidia/cu13/lib/libcublasLt.so.13");
  Plan made = plan(venv);
  ASSERT_THAT(summary(made), ElementsAre("install nvidia-cublas 13.1.0.3 pin"));
  EXPECT_THAT(reason_of(made.actions[0]),
              HasSubstr("cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,"
                        "nvjitlink,nvrtc,nvtx]==13.0.2, which pins nvidia-cublas==13.1.0.3.*"));
}

TEST_F(PlanMake, Torch211WithoutTheMetaPackageReadsItsPinsFromTheIndex) {
  fs::path venv = scenario("torch211-cu130");
  pip_uninstall(venv, {"cuda-toolkit", "nvidia-cublas"});
  Plan made = plan(venv);
  // cuda-toolkit's METADATA (its extras' pins) came from the index's PEP 658 file.
  EXPECT_THAT(summary(made),
              ElementsAre("install cuda-toolkit 13.0.2 pin", "install nvidia-cublas 13.1.0.3 pin"));
  EXPECT_THAT(made.unresolved, IsEmpty()) << dump(made.unresolved);
}

TEST_F(PlanMake, MetaPackageMetadataAndDigestsComeFromTheWheelsWhenTheIndexHasNone) {
  fs::path venv = scenario("torch211-cu130");
  pip_uninstall(venv, {"cuda-toolkit", "nvidia-cublas"});
  // A file:// index, first in line, that serves cuda-toolkit and nvidia-cublas without PEP 658
  // metadata and without sizes (PEP 503 HTML): the planner reads cuda-toolkit's METADATA from
  // the wheel and downloads both wheels for their sizes.
  const auto& world = venvfix::testing::test_world();
  fs::path root = m_dir->path() / "flat-index";
  for (const char* file : {"cuda_toolkit-13.0.2-py3-none-any.whl",
                           "nvidia_cublas-13.1.0.3-py3-none-manylinux_2_27_x86_64.whl"}) {
    std::string project = std::string(file).starts_with("cuda") ? "cuda-toolkit" : "nvidia-cublas";
    auto digest = sha256_file(world.wheels_dir / file);
    ASSERT_TRUE(digest) << file;
    fs::create_directories(root / project);
    std::ofstream(root / project / "index.html")
        << "<html><body><a href=\"file://" << (world.wheels_dir / file).string()
        << "#sha256=" << to_hex(*digest) << "\">" << file << "</a></body></html>\n";
  }
  verify::Analysis analysis = analyse(venv);
  index::IndexClient client(
      index_config({"file://" + root.string(), world_index_url()}, path("cache")));
  auto made = make_plan(analysis, manifests(), client, {});
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_THAT(summary(*made),
              ElementsAre("install cuda-toolkit 13.0.2 pin", "install nvidia-cublas 13.1.0.3 pin"));
  for (const Action& planned : made->actions) {
    const Install& action = std::get<Install>(planned);
    EXPECT_EQ(action.size, fs::file_size(world.wheels_dir / action.file)) << action.file;
    EXPECT_EQ(action.url, "file://" + (world.wheels_dir / action.file).string());
  }
}

TEST_F(PlanMake, SeedOnTheHostViewPlansTheSameInstallForTheEscapedSoname) {
  if (!fs::exists("/usr/local/cuda-13.0/lib/libcudnn.so.9")) {
    GTEST_SKIP() << "this host has no system cuDNN in its loader cache";
  }
  auto venv = env::open_venv_at(shared_scenario("seed"));
  ASSERT_TRUE(venv);
  auto host = elf::SystemView::host(elf::UseLdLibraryPath::no);
  ASSERT_TRUE(host);
  auto analysis = verify::analyze(std::move(venv).value(), manifests(), *host, {});
  ASSERT_TRUE(analysis);
  index::IndexClient client(index_config({world_index_url()}, path("cache")));
  auto made = make_plan(*analysis, manifests(), client, {});
  ASSERT_TRUE(made) << made.error().message;
  // The loader takes the system's libcudnn.so.9 today; after the install the venv's copy is
  // found first (torch's RPATH), so nothing stays escaped.
  EXPECT_THAT(summary(*made), ElementsAre("install nvidia-cudnn-cu12 9.10.2.21 pin"));
  EXPECT_THAT(made->unresolved, IsEmpty()) << dump(made->unresolved);
}

TEST_F(PlanMake, CudaMixRemovesTheConflictingNcclAndRepairsTheCu12One) {
  Plan made = plan(shared_scenario("cuda-mix"));
  EXPECT_THAT(summary(made), ElementsAre("remove nvidia-nccl-cu13 2.28.9 conflicting-cuda",
                                         "install nvidia-nccl-cu12 2.27.3 pin"));
  EXPECT_THAT(remove_at(made, 0).keep, ElementsAre("nvidia/nccl/lib/libnccl.so.2"));
}

TEST_F(PlanMake, CudaMixWithRemoveForeignCudaRemovesEveryCuda13Distribution) {
  PlanOptions options;
  options.remove_foreign_cuda = true;
  Plan made = plan(shared_scenario("cuda-mix"), options);
  EXPECT_THAT(summary(made), ElementsAre("remove nvidia-cublas 13.1.0.3 foreign-cuda",
                                         "remove nvidia-cuda-runtime 13.0.96 foreign-cuda",
                                         "remove nvidia-nccl-cu13 2.28.9 conflicting-cuda",
                                         "install nvidia-nccl-cu12 2.27.3 pin"));
  EXPECT_THAT(remove_at(made, 0).keep, IsEmpty());
  EXPECT_THAT(made.unresolved, IsEmpty()) << dump(made.unresolved);
}

TEST_F(PlanMake, UninstallCudnnCu13BesideCu12RepairsTheCu12Files) {
  fs::path venv = scenario("healthy");
  // Overwrites cu12's nvidia/cudnn/lib/*.so.9 (pinned: the index has newer cuDNN builds).
  pip_install(venv, {"nvidia-cudnn-cu13==9.19.0.56"});
  PlanOptions options;
  options.uninstall = {"nvidia-cudnn-cu13"};
  Plan made = plan(venv, options);
  ASSERT_THAT(summary(made), ElementsAre("remove nvidia-cudnn-cu13 9.19.0.56 uninstall",
                                         "install nvidia-cudnn-cu12 9.10.2.21 repair:pin"));
  EXPECT_EQ(remove_at(made, 0).keep.size(), 9u);
  EXPECT_THAT(reason_of(made.actions[1]),
              HasSubstr("not hold its own bytes once nvidia-cudnn-cu13 is removed"));
  EXPECT_THAT(made.unresolved, IsEmpty()) << dump(made.unresolved);
}

TEST_F(PlanMake, UninstallingWhatTorchPinsCannotBeRepaired) {
  PlanOptions options;
  options.uninstall = {"nvidia-cudnn-cu12"};
  Plan made = plan(shared_scenario("healthy"), options);
  EXPECT_THAT(summary(made), ElementsAre("remove nvidia-cudnn-cu12 9.10.2.21 uninstall"));
  EXPECT_THAT(unresolved_summary(made),
              ::testing::UnorderedElementsAre("unmet-requirement nvidia-cudnn-cu12",
                                              "unresolved-soname libcudnn.so.9"));
}

TEST_F(PlanMake, UninstallOfWhatIsNotInstalledIsBadInput) {
  verify::Analysis analysis = analyse(shared_scenario("healthy"));
  index::IndexClient client(index_config({world_index_url()}, path("cache")));
  PlanOptions options;
  options.uninstall = {"no-such-dist"};
  auto made = make_plan(analysis, manifests(), client, options);
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code, ExitCode::usage);
  EXPECT_THAT(made.error().message, HasSubstr("no-such-dist"));
}

TEST_F(PlanMake, ConflictingPinsAreAFindingNamingBothNeverAChoice) {
  fs::path venv = scenario("seed");
  write_distribution(site_packages_of(venv), "old-cudnn-user", "1.0", {"nvidia-cudnn-cu12<9.6"});
  Plan made = plan(venv);
  EXPECT_EQ(find_action(made, "nvidia-cudnn-cu12"), nullptr);
  // The conflict, and the soname that stays unresolved because of it.
  ASSERT_THAT(unresolved_summary(made), ElementsAre("conflicting-requirements nvidia-cudnn-cu12",
                                                    "unresolved-soname libcudnn.so.9"));
  const nlohmann::json entry = to_json(made.unresolved[0]);
  EXPECT_EQ(entry["kind"], "conflicting-requirements");
  EXPECT_EQ(entry["dist"], "nvidia-cudnn-cu12");
  std::string message = entry["message"];
  EXPECT_THAT(message, HasSubstr("torch pins nvidia-cudnn-cu12==9.10.2.21"));
  EXPECT_THAT(message, HasSubstr("old-cudnn-user requires nvidia-cudnn-cu12<9.6"));
}

TEST_F(PlanMake, ASonameNothingProvidesIsUnresolvedAndTheRestOfThePlanStands) {
  using namespace venvfix::elf::testing;
  fs::path venv = scenario("seed");
  fs::path site = site_packages_of(venv);
  // A second target whose library needs a soname no wheel venvfix knows ships.
  fs::path stub = m_dir->path() / "stub" / "libvenvfix_nowhere.so.7";
  build_shared_object(stub, SharedObject("libvenvfix_nowhere.so.7"));
  fs::path library = m_dir->path() / "lib" / "libmine.so";
  build_shared_object(library, SharedObject("libmine.so").needs(stub));
  auto bytes = read_file(library);
  ASSERT_TRUE(bytes);
  write_distribution(site, "mine", "1.0", {}, {{"mine/libmine.so", *bytes}});
  Plan made = plan(venv, {}, {"torch", "mine"});
  EXPECT_THAT(summary(made), ElementsAre("install nvidia-cudnn-cu12 9.10.2.21 pin"));
  ASSERT_THAT(unresolved_summary(made), ElementsAre("unresolved-soname libvenvfix_nowhere.so.7"));
  EXPECT_THAT(message_of(made.unresolved[0]),
              HasSubstr("shipped by no distribution venvfix knows"));
}

TEST_F(PlanMake, NoTargetMeansNothingToCheck) {
  fs::path venv = m_dir->path() / "empty";
  auto result =
      venvfix::testing::run_command({"python3", "-m", "venv", "--without-pip", venv.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  Plan made = plan(venv);
  EXPECT_THAT(made.targets, IsEmpty());
  EXPECT_THAT(made.actions, IsEmpty());
  EXPECT_THAT(made.unresolved, IsEmpty());
}

TEST_F(PlanMake, DriverLibrariesAreNotesNeverActions) {
  Plan made = plan(shared_scenario("healthy"));
  for (const Action& action : made.actions) EXPECT_NE(dist_of(action), "libcuda");
  for (const Note& typed : made.notes) {
    const nlohmann::json note = to_json(typed);
    if (note.value("kind", "") != "driver-library") continue;
    EXPECT_EQ(note["provided_by"], "driver");
    EXPECT_THAT(note["message"].get<std::string>(), HasSubstr("never planned"));
  }
}

TEST_F(PlanMake, IndexFailureIsANetworkError) {
  verify::Analysis analysis = analyse(shared_scenario("seed"));
  // A port nothing listens on.
  index::IndexClient client(index_config({"http://127.0.0.1:9/simple"}, m_dir->path() / "c"));
  auto made = make_plan(analysis, manifests(), client, {});
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code, ExitCode::network);
  EXPECT_THAT(made.error().message, HasSubstr("127.0.0.1:9"));
}

TEST_F(PlanMake, HealthyPlanAsksTheIndexNothing) {
  verify::Analysis analysis = analyse(shared_scenario("healthy"));
  index::IndexClient client(index_config({"http://127.0.0.1:9/simple"}, m_dir->path() / "c"));
  auto made = make_plan(analysis, manifests(), client, {});
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_THAT(made->actions, IsEmpty());
}

}  // namespace
}  // namespace venvfix::plan
