// Proves the test world is real: the ELF flags are what the manifests say, pip sees the venvs
// the way the scenarios claim, and the real loader fails (or not) exactly where torch would.
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "support/paths.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/sha256.hpp"

namespace venvfix::testing {
namespace {

const char* const k_site = "lib/python3.11/site-packages";

fs::path site_packages(const fs::path& venv) {
  for (const auto& entry : fs::directory_iterator(venv / "lib")) {
    if (entry.path().filename().string().rfind("python", 0) == 0) {
      return entry.path() / "site-packages";
    }
  }
  return venv / k_site;
}

std::string readelf_dynamic(const fs::path& file) {
  const CommandResult r = run_command({"readelf", "-d", file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

// The RECORD hash (urlsafe base64 sha256) that `dist_info/RECORD` lists for `path`, or "".
std::string record_hash(const fs::path& dist_info, const std::string& path) {
  auto text = read_file(dist_info / "RECORD");
  if (!text) {
    return "";
  }
  const std::string prefix = path + ",sha256=";
  const auto at = text->find(prefix);
  if (at == std::string::npos) {
    return "";
  }
  const auto start = at + prefix.size();
  return text->substr(start, text->find(',', start) - start);
}

std::string file_hash(const fs::path& file) {
  auto data = read_file(file);
  return data ? to_base64url_nopad(sha256(*data)) : "";
}

class TestWorld : public ::testing::Test {
 protected:
  // Copies shared by the read-only tests of this suite (made once; never modified).
  static void TearDownTestSuite() { s_shared.reset(); }
  static fs::path shared_scenario(const std::string& name) {
    if (!s_shared) {
      auto dir = TempDir::create("venvfix-world-shared-");
      if (!dir) {
        throw std::runtime_error("cannot create a temporary directory");
      }
      s_shared.emplace(std::move(*dir));
    }
    const fs::path venv = s_shared->path() / name;
    return fs::exists(venv) ? venv : make_scenario(name, s_shared->path());
  }
  static inline std::optional<TempDir> s_shared;
};

TEST_F(TestWorld, ManifestsValidate) {
  const CommandResult r = run_command(
      {"python3", venvfix::testing::source_dir().string() + "/tests/world/check_manifests.py"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(TestWorld, TorchCarriesRpathAndNvidiaRunpath) {
  const fs::path site = site_packages(shared_scenario("healthy"));
  const std::string torch_cuda = readelf_dynamic(site / "torch/lib/libtorch_cuda.so");
  EXPECT_NE(torch_cuda.find("(RPATH)"), std::string::npos);
  EXPECT_EQ(torch_cuda.find("(RUNPATH)"), std::string::npos);
  EXPECT_NE(torch_cuda.find("$ORIGIN/../../nvidia/cudnn/lib"), std::string::npos);
  EXPECT_NE(torch_cuda.find("Shared library: [libcudnn.so.9]"), std::string::npos);
  EXPECT_NE(torch_cuda.find("Library soname: [libtorch_cuda.so]"), std::string::npos);

  const std::string cudnn = readelf_dynamic(site / "nvidia/cudnn/lib/libcudnn_ops.so.9");
  EXPECT_NE(cudnn.find("(RUNPATH)"), std::string::npos);
  EXPECT_EQ(cudnn.find("(RPATH)"), std::string::npos);
  EXPECT_NE(cudnn.find("Shared library: [libcudnn_graph.so.9]"), std::string::npos);
  EXPECT_NE(cudnn.find("Shared library: [libz.so.1]"), std::string::npos);
}

TEST_F(TestWorld, HealthyVenvPassesPipCheck) {
  const fs::path venv = shared_scenario("healthy");
  const std::string python = (venv / "bin/python").string();
  const CommandResult check = run_command({python, "-m", "pip", "check"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  const CommandResult list = run_command({python, "-m", "pip", "list", "--format=freeze"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("torch==2.8.0+cu128"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("nvidia-cudnn-cu12==9.10.2.21"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("nvidia-cublas-cu12==12.8.4.1"), std::string::npos)
      << "pip must pick torch's pin, not the newer 12.9.1.4 in the index";
}

TEST_F(TestWorld, SeedKeepsGhostCudnnDistribution) {
  const fs::path venv = shared_scenario("seed");
  const CommandResult list =
      run_command({(venv / "bin/python").string(), "-m", "pip", "list", "--format=freeze"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("nvidia-cudnn-cu12==9.10.2.21"), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find("nvidia-cudnn-cu13"), std::string::npos) << list.out;
  const fs::path site = site_packages(venv);
  EXPECT_FALSE(fs::exists(site / "nvidia/cudnn/lib/libcudnn.so.9"));
  EXPECT_FALSE(
      record_hash(site / "nvidia_cudnn_cu12-9.10.2.21.dist-info", "nvidia/cudnn/lib/libcudnn.so.9")
          .empty());
}

TEST_F(TestWorld, ClobberedCudnnHasTheCu12Bytes) {
  const fs::path site = site_packages(shared_scenario("clobbered"));
  const std::string path = "nvidia/cudnn/lib/libcudnn.so.9";
  const std::string actual = file_hash(site / path);
  ASSERT_FALSE(actual.empty());
  EXPECT_EQ(actual, record_hash(site / "nvidia_cudnn_cu12-9.10.2.21.dist-info", path));
  EXPECT_NE(actual, record_hash(site / "nvidia_cudnn_cu13-9.19.0.56.dist-info", path));
  EXPECT_FALSE(record_hash(site / "nvidia_cudnn_cu13-9.19.0.56.dist-info", path).empty());
}

TEST_F(TestWorld, HermeticImportFailsOnlyInSeed) {
  if (!hermetic_available()) {
    GTEST_SKIP() << "needs root and unshare -m for the private mount namespace";
  }
  const World& world = test_world();
  const std::vector<std::string> import = {"-c", "import torch; print(torch.__version__)"};
  const fs::path healthy = shared_scenario("healthy");
  const CommandResult ok =
      run_command({hermetic_runner().string(), world.hermetic_cache.string(), "--",
                   (healthy / "bin/python").string(), import[0], import[1]});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "2.8.0+cu128\n");

  const fs::path seed = shared_scenario("seed");
  const CommandResult bad =
      run_command({hermetic_runner().string(), world.hermetic_cache.string(), "--",
                   (seed / "bin/python").string(), import[0], import[1]});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("libcudnn.so.9: cannot open shared object file"), std::string::npos)
      << bad.err;
}

TEST_F(TestWorld, HostViewImportsSeedWithTheSystemCudnn) {
  const CommandResult cache = run_command({"ldconfig", "-p"});
  if (cache.out.find("libcudnn.so.9 ") == std::string::npos) {
    GTEST_SKIP() << "this host's ld.so.cache has no libcudnn.so.9";
  }
  const fs::path seed = shared_scenario("seed");
  const CommandResult r = run_command({(seed / "bin/python").string(), "-c",
                                       "import torch, re; m = open('/proc/self/maps').read(); "
                                       "print(re.search(r'\\S*libcudnn.so.9', m).group(0))"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find(seed.string()), std::string::npos) << "cuDNN escaped to: " << r.out;
}

TEST_F(TestWorld, IndexServerNegotiatesHtmlAndJson) {
  const World& world = test_world();
  IndexServer server = IndexServer::start(world.index_dir);
  const std::string url = server.url() + "/nvidia-cudnn-cu13/";
  const std::string fetch =
      "import sys, urllib.request as u; r = u.urlopen(u.Request(sys.argv[1], headers={'Accept': "
      "sys.argv[2]})); print(r.headers['Content-Type']); print(r.read().decode())";
  const CommandResult json = run_command(
      {"python3", "-c", fetch, url,
       "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out.rfind("application/vnd.pypi.simple.v1+json", 0), 0u) << json.out;
  EXPECT_NE(json.out.find("\"core-metadata\""), std::string::npos);
  const CommandResult html = run_command({"python3", "-c", fetch, url, "text/html"});
  ASSERT_EQ(html.exit_code, 0) << html.err;
  EXPECT_NE(html.out.find("#sha256="), std::string::npos) << html.out;
  EXPECT_NE(html.out.find("data-dist-info-metadata=\"sha256="), std::string::npos);
  EXPECT_TRUE(
      fs::exists(world.wheels_dir /
                 "nvidia_cudnn_cu13-9.19.0.56-py3-none-manylinux_2_27_x86_64.whl.metadata"));
}

TEST_F(TestWorld, RunCommandReportsExitAndTimeout) {
  const CommandResult r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  const CommandResult slow = run_command({"sleep", "5"}, {}, 1);
  EXPECT_EQ(slow.exit_code, 137);
  const CommandResult env = run_command({"sh", "-c", "echo $VENVFIX_X"}, {{"VENVFIX_X", "y"}});
  EXPECT_EQ(env.out, "y\n");
}

}  // namespace
}  // namespace venvfix::testing
