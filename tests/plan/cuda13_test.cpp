// CUDA 13 as the index serves it now (issue 11 part 7): the test world's index has the
// unsuffixed toolkit wheels, versions out of every pin's range beside the pinned ones (newer,
// a pre-release, a wheel for another platform only, a yanked file), cuda-toolkit's ==X.* extras,
// torch 2.12's nvidia-cublas range, and the -cu13 toolkit names as sdist-only 0.0.1
// placeholders. Real pip (`install --dry-run --report`, in a throwaway venv) is the judge of
// what a plan installs; the manifests are not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "plan/plan_test_support.hpp"
#include "support/commands.hpp"
#include "support/scratch_test.hpp"
#include "venvfix/pep/name.hpp"

namespace venvfix::plan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace venvfix::plan::testing;

// name -> "version file"
using Chosen = std::map<std::string, std::string>;

// pip as the judge runs it: nothing from (or into) the machine's wheel cache.
const std::map<std::string, std::string> k_no_cache = {{"PIP_NO_CACHE_DIR", "1"}};

std::string file_of_url(std::string url) {
  url = url.substr(url.rfind('/') + 1);
  for (std::size_t at = url.find("%2B"); at != std::string::npos; at = url.find("%2B"))
    url.replace(at, 3, "+");
  return url;
}

class PlanCuda13 : public venvfix::testing::ScratchTest {
 protected:
  PlanCuda13() : ScratchTest("venvfix-plan-cuda13-") {}
  static void pip(const fs::path& venv, const std::vector<std::string>& args) {
    auto result = venvfix::testing::run_pip(venv, args, k_no_cache);
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }
  // Every installed distribution that manifests/ knows (NVIDIA wheels and cuda-toolkit).
  std::vector<std::string> manifest_dists(const fs::path& venv) {
    std::vector<std::string> out;
    for (const dist::Distribution& d : analyse(venv).inventory.distributions) {
      if (manifests().find_distribution(d.normalized_name)) out.push_back(d.normalized_name);
    }
    return out;
  }
  // What real pip installs for `requirement` from the world's index into a fresh venv made
  // from `like`'s interpreter, restricted to the distributions manifests/ knows.
  Chosen pip_choice(const fs::path& like, const std::string& requirement) {
    fs::path throwaway = path("pip-judge");
    fs::path report = path("pip-report.json");
    // ensurepip runs pip: without the machine's configuration or cache either.
    auto made = venvfix::testing::run_command(
        {(like / "bin/python").string(), "-m", "venv", throwaway.string()},
        {{"PIP_CONFIG_FILE", "/dev/null"}, {"PIP_NO_CACHE_DIR", "1"}}, 300);
    if (made.exit_code != 0) throw std::runtime_error(made.err);
    auto result = venvfix::testing::run_pip(
        throwaway,
        {"install", "--dry-run", "--ignore-installed", "--report", report.string(), "-q",
         "--index-url", world_index_url(), requirement},
        k_no_cache);
    if (result.exit_code != 0) throw std::runtime_error(result.err);
    std::ifstream in(report);
    nlohmann::json doc = nlohmann::json::parse(in);
    Chosen out;
    for (const auto& item : doc.at("install")) {
      std::string name = pep::normalize_name(item.at("metadata").at("name").get<std::string>());
      if (!manifests().find_distribution(name)) continue;
      out[name] = item.at("metadata").at("version").get<std::string>() + " " +
                  file_of_url(item.at("download_info").at("url").get<std::string>());
    }
    return out;
  }
  Plan plan(const fs::path& venv, const std::vector<std::string>& index_urls) {
    return plan_venv(venv, index_urls, path("cache"));
  }
  static Chosen installs(const Plan& made) {
    Chosen out;
    for (const Action& action : made.actions) {
      if (const auto* install = std::get_if<Install>(&action)) {
        out[install->dist] = install->version + " " + install->file;
      }
    }
    return out;
  }
};

TEST_F(PlanCuda13, RealCuda13WheelSetMatchesPip) {
  // torch 2.11.0+cu130 pins exactly the CUDA 13 set of reference §8 (cuda-toolkit 13.0.2's
  // components, cuDNN 9.19.0.56, NCCL 2.28.9) plus cuSPARSELt and NVSHMEM.
  fs::path venv = scenario("torch211-cu130");
  std::vector<std::string> uninstall = {"uninstall", "-q", "-y"};
  for (const std::string& name : manifest_dists(venv)) uninstall.push_back(name);
  ASSERT_GT(uninstall.size(), 15u);
  pip(venv, uninstall);

  Plan made = plan(venv, {world_index_url()});
  EXPECT_THAT(made.unresolved, IsEmpty()) << dump(made.unresolved);
  Chosen pip_chose = pip_choice(venv, "torch==2.11.0+cu130");
  EXPECT_EQ(installs(made), pip_chose);
  // The §8 versions, whatever else the index has (13.2.0.9, 13.0.96.1rc1, a yanked 10.4.0.35.1,
  // an aarch64-only 12.0.0.61.1, torch 2.12.1's cuDNN 9.20.0.48).
  EXPECT_THAT(pip_chose["nvidia-cublas"], HasSubstr("13.1.0.3 "));
  EXPECT_THAT(pip_chose["nvidia-cuda-runtime"], HasSubstr("13.0.96 "));
  EXPECT_THAT(pip_chose["nvidia-curand"], HasSubstr("10.4.0.35 "));
  EXPECT_THAT(pip_chose["nvidia-cufft"], HasSubstr("12.0.0.61 "));
  EXPECT_THAT(pip_chose["nvidia-cudnn-cu13"], HasSubstr("9.19.0.56 "));
  EXPECT_THAT(pip_chose["nvidia-nccl-cu13"], HasSubstr("2.28.9 "));
  for (const auto& [name, chosen] : installs(made)) {
    EXPECT_FALSE(name.ends_with("-cu13") && manifests().placeholder_of(name)) << name;
  }
}

TEST_F(PlanCuda13, CublasRangeTakesTheNewestInRangeAsPipDoes) {
  // torch 2.12.1+cu130: cuda-toolkit[...]==13.0.2 without cublas, and
  // nvidia-cublas>=13.1.0.3,<=13.1.1.3 (13.2.0.9 is above it).
  fs::path venv = scenario("all-nvidia-removed");
  pip(venv, {"uninstall", "-q", "-y", "torch"});
  pip(venv,
      {"install", "-q", "--no-deps", "--index-url", world_index_url(), "torch==2.12.1+cu130"});

  Plan made = plan(venv, {world_index_url()});
  // torch 2.12's cuDNN 9.20.0.48 omits the tensor_ir sub-library its libcudnn.so.9 opens
  // (pytorch/pytorch #188892): the real failure, which no wheel of the pin repairs.
  EXPECT_THAT(unresolved_summary(made),
              ElementsAre("unresolved-soname libcudnn_engines_tensor_ir.so.9"))
      << dump(made.unresolved);
  Chosen pip_chose = pip_choice(venv, "torch==2.12.1+cu130");
  EXPECT_EQ(installs(made), pip_chose);
  EXPECT_THAT(pip_chose["nvidia-cublas"], HasSubstr("13.1.1.3 "));
  EXPECT_THAT(pip_chose["nvidia-cudnn-cu13"], HasSubstr("9.20.0.48 "));
  for (const Action& action : made.actions) {
    if (dist_of(action) == "nvidia-cublas") {
      EXPECT_THAT(reason_of(action), HasSubstr("nvidia-cublas<=13.1.1.3,>=13.1.0.3"));
    }
  }
}

// An index of one project page per name (PEP 503 HTML, file:// links into the world).
fs::path flat_index(const fs::path& root, const std::map<std::string, std::string>& files) {
  const auto& world = venvfix::testing::test_world();
  for (const auto& [project, file] : files) {
    auto digest = sha256_file(world.wheels_dir / file);
    if (!digest) throw std::runtime_error(file);
    fs::create_directories(root / project);
    std::ofstream(root / project / "index.html")
        << "<html><body><a href=\"file://" << (world.wheels_dir / file).string()
        << "#sha256=" << to_hex(*digest) << "\">" << file << "</a></body></html>\n";
  }
  return root;
}

TEST_F(PlanCuda13, AnIndexWithOnlyThePlaceholderIsNamedNeverPlanned) {
  fs::path venv = scenario("torch211-cu130");
  pip(venv, {"uninstall", "-q", "-y", "nvidia-cublas"});
  // cuda-toolkit stays installed (its pins are read from it); the index has nothing but the
  // 0.0.1 sdist of nvidia-cublas-cu13.
  fs::path root =
      flat_index(path("stub-index"), {{"nvidia-cublas-cu13", "nvidia_cublas_cu13-0.0.1.tar.gz"}});
  verify::Analysis analysis = analyse(venv);
  index::IndexClient client(index_config({"file://" + root.string()}, path("cache")));
  auto made = make_plan(analysis, manifests(), client, {});
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code, ExitCode::network);
  EXPECT_THAT(made.error().message, HasSubstr("no index has a project named 'nvidia-cublas'"));
  EXPECT_THAT(made.error().message,
              HasSubstr("the index has only nvidia-cublas-cu13 (nvidia_cublas_cu13-0.0.1.tar.gz), "
                        "a source-only placeholder whose build fails, which venvfix never "
                        "installs"));
}

TEST_F(PlanCuda13, AGhostUnderAPlaceholderNameIsRepairedWithTheRealComponent) {
  // A hand-made distribution named nvidia-cublas-cu13 claims libcublas.so.13, whose file is
  // gone (and the real nvidia-cublas is uninstalled): the plan installs nvidia-cublas at
  // torch's pin and says it does not reinstall the placeholder.
  fs::path venv = scenario("torch211-cu130");
  pip(venv, {"uninstall", "-q", "-y", "nvidia-cublas"});
  fs::path site = site_packages_of(venv);
  write_distribution(site, "nvidia-cublas-cu13", "0.0.1", {},
                     {{"nvidia/cu13/lib/libcublas.so.13", "placeholder"}});
  fs::remove(site / "nvidia/cu13/lib/libcublas.so.13");

  Plan made = plan(venv, {world_index_url()});
  Chosen chosen = installs(made);
  EXPECT_EQ(chosen.count("nvidia-cublas-cu13"), 0u);
  ASSERT_EQ(chosen.count("nvidia-cublas"), 1u) << dump(made.unresolved);
  EXPECT_THAT(chosen["nvidia-cublas"], HasSubstr("13.1.0.3 "));
  for (const Unresolved& typed : made.unresolved) {
    const nlohmann::json entry = to_json(typed);
    if (entry.value("kind", "") != "placeholder") continue;
    EXPECT_EQ(entry.value("dist", ""), "nvidia-cublas-cu13");
    EXPECT_EQ(entry.value("use", ""), "nvidia-cublas");
  }
}

}  // namespace
}  // namespace venvfix::plan
