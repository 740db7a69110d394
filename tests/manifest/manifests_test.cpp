#include "venvfix/manifest/manifests.hpp"
#include "support/paths.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace venvfix::manifest {
namespace {

const Manifests& real_manifests() {
  static const Manifests manifests = [] {
    auto loaded = Manifests::load(venvfix::testing::source_dir() / "manifests");
    EXPECT_TRUE(loaded) << loaded.error().message;
    return std::move(loaded).value();
  }();
  return manifests;
}

std::vector<std::string> names(const std::vector<const Distribution*>& distributions) {
  std::vector<std::string> out;
  out.reserve(distributions.size());
  for (const Distribution* d : distributions) out.push_back(d->name);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ManifestLoad, RealManifestsLoadAndValidate) {
  const Manifests& m = real_manifests();
  EXPECT_GT(m.distributions().size(), 30u);
  EXPECT_FALSE(m.torch_preload().libraries.empty());
  EXPECT_EQ(m.torch_preload().search.front(), "nvidia/{folder}/lib");
}

TEST(ManifestLoad, CudnnProvidersFollowTheCudaMajor) {
  const Manifests& m = real_manifests();
  EXPECT_EQ(names(m.providers_of("libcudnn.so.9", 12)),
            std::vector<std::string>{"nvidia-cudnn-cu12"});
  EXPECT_EQ(names(m.providers_of("libcudnn.so.9", 13)),
            std::vector<std::string>{"nvidia-cudnn-cu13"});
  const Distribution* cu12 = m.find_distribution("NVIDIA_cudnn.cu12");
  ASSERT_NE(cu12, nullptr);
  EXPECT_EQ(cu12->lib_dir, "nvidia/cudnn/lib");
  EXPECT_EQ(cu12->cuda_major, 12);
}

TEST(ManifestLoad, CudnnSonameSetIsKeyedByVersion) {
  const Distribution* cu13 = real_manifests().find_distribution("nvidia-cudnn-cu13");
  ASSERT_NE(cu13, nullptr);
  auto v9_20 = pep::Version::parse("9.20.0.48");
  auto v9_19 = pep::Version::parse("9.19.0.56");
  ASSERT_TRUE(v9_20 && v9_19);
  const Release* r20 = cu13->release_for(*v9_20);
  const Release* r19 = cu13->release_for(*v9_19);
  ASSERT_NE(r20, nullptr);
  ASSERT_NE(r19, nullptr);
  EXPECT_EQ(r20->find_library("libcudnn_engines_tensor_ir.so.9"), nullptr);
  ASSERT_NE(r19->find_library("libcudnn.so.9"), nullptr);
  EXPECT_FALSE(r19->find_library("libcudnn.so.9")->dlopens.empty());
}

TEST(ManifestLoad, SystemAndDriverSonamesAreNeverFetched) {
  const Manifests& m = real_manifests();
  EXPECT_EQ(m.system_provider("libc.so.6"), Provider::system);
  EXPECT_EQ(m.system_provider("libstdc++.so.6"), Provider::system);
  EXPECT_EQ(m.system_provider("ld-linux-x86-64.so.2"), Provider::system);
  EXPECT_EQ(m.system_provider("libcuda.so.1"), Provider::driver);
  EXPECT_EQ(m.system_provider("libcudnn.so.9"), std::nullopt);
  EXPECT_EQ(m.system_provider("libgomp.so.1"), std::nullopt);  // bundled by torch, not system
}

constexpr std::string_view k_system = R"({"schema": "venvfix-manifest-system/1", "libraries": []})";
constexpr std::string_view k_torch =
    R"({"schema": "venvfix-manifest-torch/1", "preload": {"source": "s", "search": [], "libraries": []}})";

TEST(ManifestLoad, Cuda13ToolkitPlaceholdersNameTheRealComponent) {
  const Manifests& m = real_manifests();
  const Distribution* real = m.placeholder_of("NVIDIA_cublas_cu13");
  ASSERT_NE(real, nullptr);
  EXPECT_EQ(real->name, "nvidia-cublas");
  EXPECT_EQ(m.find_distribution("nvidia-cublas-cu13"), nullptr);
  ASSERT_NE(m.placeholder_of("nvidia-cuda-runtime-cu13"), nullptr);
  EXPECT_EQ(m.placeholder_of("nvidia-cuda-runtime-cu13")->name, "nvidia-cuda-runtime");
  // cuDNN, NCCL, NVSHMEM and cuSPARSELt keep their -cu13 suffix: real distributions.
  EXPECT_EQ(m.placeholder_of("nvidia-cudnn-cu13"), nullptr);
  EXPECT_NE(m.find_distribution("nvidia-cudnn-cu13"), nullptr);
  EXPECT_EQ(m.placeholder_of("nvidia-cublas"), nullptr);
}

TEST(ManifestLoad, MalformedEntriesNameFileAndEntry) {
  struct Case {
    std::string nvidia;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"not json", "nvidia-wheels.json: not a valid JSON object"},
      {R"({"schema": "other/1", "distributions": []})", "\"schema\" must be"},
      {R"({"schema": "venvfix-manifest-nvidia/1"})", "\"distributions\" is missing"},
      {R"({"schema": "venvfix-manifest-nvidia/1", "distributions": [{"name": "x-y"}]})",
       "distributions[0] (x-y): \"cuda_major\" is missing"},
      {R"({"schema": "venvfix-manifest-nvidia/1", "distributions": [{"name": "a", "cuda_major": 12,
          "lib_dir": "../etc", "source": "s", "releases": []}]})",
       "\"lib_dir\" must be a relative path"},
      {R"({"schema": "venvfix-manifest-nvidia/1", "distributions": [{"name": "a", "cuda_major": 12,
          "lib_dir": "nvidia/a/lib", "source": "s", "releases": [{"versions": "==banana",
          "libraries": []}]}]})",
       "distributions[0] (a) releases[0]: \"versions\" is not a valid specifier set"},
      {R"({"schema": "venvfix-manifest-nvidia/1", "distributions": [{"name": "a", "cuda_major": 12,
          "lib_dir": "nvidia/a/lib", "source": "s", "releases": [{"versions": ">=1",
          "libraries": [{"soname": "../x.so"}]}]}]})",
       "libraries[0]: \"soname\" and \"file\" must be plain file names"},
      {R"({"schema": "venvfix-manifest-nvidia/1", "distributions": [{"name": "a", "cuda_major": 13,
          "lib_dir": "nvidia/cu13/lib", "source": "s", "placeholders": [{"name": "a cu13",
          "source": "s"}], "releases": []}]})",
       "distributions[0] (a) placeholders[0]: \"a cu13\" is not a valid project name"},
  };
  for (const Case& c : cases) {
    auto result = Manifests::from_text(c.nvidia, k_system, k_torch);
    ASSERT_FALSE(result) << c.nvidia;
    EXPECT_NE(result.error().message.find(c.expected), std::string::npos)
        << result.error().message << "\nexpected: " << c.expected;
  }
}

TEST(ManifestLoad, MissingDirectoryIsAClearError) {
  auto result = Manifests::load("/nonexistent/manifests");
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("/nonexistent/manifests/nvidia-wheels.json"),
            std::string::npos);
}

}  // namespace
}  // namespace venvfix::manifest
