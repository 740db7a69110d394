#include "venvfix/pep/wheel_filename.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace venvfix::pep {
namespace {

WheelFilename w(std::string_view name) {
  auto parsed = WheelFilename::parse(name);
  EXPECT_TRUE(parsed) << name << ": " << (parsed ? "" : parsed.error().message);
  return parsed ? *parsed : WheelFilename{};
}

TEST(PepWheelFilename, ParsesParts) {
  auto a = w("nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl");
  EXPECT_EQ(a.name, "nvidia_cudnn_cu12");
  EXPECT_EQ(a.normalized_name, "nvidia-cudnn-cu12");
  EXPECT_EQ(a.version.to_string(), "9.10.2.21");
  EXPECT_FALSE(a.build_tag);
  EXPECT_EQ(a.python_tags, (std::vector<std::string>{"py3"}));
  EXPECT_EQ(a.platform_tags, (std::vector<std::string>{"manylinux_2_27_x86_64"}));

  auto b = w("torch-2.8.0+cu128-1_fix-cp312-cp312-manylinux_2_28_x86_64.whl");
  EXPECT_EQ(b.version.to_string(), "2.8.0+cu128");
  ASSERT_TRUE(b.build_tag);
  EXPECT_EQ(b.build_tag->first, 1);
  EXPECT_EQ(b.build_tag->second, "_fix");

  auto c = w("six-1.16.0-py2.py3-none-any.whl");
  std::vector<std::string> tags;
  for (const auto& t : c.tags()) tags.push_back(t.to_string());
  EXPECT_EQ(tags, (std::vector<std::string>{"py2-none-any", "py3-none-any"}));

  auto d = w("nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl");
  EXPECT_EQ(d.tags().size(), 2u);
}

TEST(PepWheelFilename, RefusesWithReason) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"torch-2.8.0-cp312-cp312-linux_x86_64.tar.gz", ".whl"},
      {"torch-2.8.0-cp312-linux_x86_64.whl", "parts"},
      {"torch-2.8.0-1-2-cp312-cp312-linux_x86_64.whl", "parts"},
      {"tor ch-2.8.0-cp312-cp312-linux_x86_64.whl", "project name"},
      {"tor__ch-2.8.0-cp312-cp312-linux_x86_64.whl", "escaped"},
      {"torch-2.8.x-cp312-cp312-linux_x86_64.whl", "invalid version"},
      {"torch-2.8.0-x1-cp312-cp312-linux_x86_64.whl", "build tag"},
      {"torch-2.8.0-99999999999-cp312-cp312-linux_x86_64.whl", "too large"},
      {"torch-2.8.0-cp312..py3-cp312-linux_x86_64.whl", "empty"},
      {"torch-2.8.0-cp312-cp312-.whl", "empty"},
      {"torch-2.8.0-cp312-cp312-linux+x86_64.whl", "character"},
      {".whl", "parts"},
      {"", ".whl"},
  };
  for (const auto& [name, reason] : bad) {
    auto parsed = WheelFilename::parse(name);
    ASSERT_FALSE(parsed) << "accepted: " << name;
    EXPECT_NE(parsed.error().message.find(reason), std::string::npos) << parsed.error().message;
    EXPECT_NE(parsed.error().message.find("invalid wheel file name"), std::string::npos);
  }
}

TEST(PepWheelFilename, SelectsBestLikePip) {
  TargetPython target{3, 12, "cp", "x86_64", {{2, 36}}, {}, ""};
  auto supported = supported_tags(target);
  std::vector<WheelFilename> wheels = {
      w("pkg-1.0-py3-none-any.whl"),
      w("pkg-1.0-cp312-cp312-manylinux_2_17_x86_64.whl"),
      w("pkg-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"),
      w("pkg-1.0-cp312-cp312-manylinux_2_39_x86_64.whl"),  // too new for glibc 2.36
      w("pkg-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"),  // other Python
      w("pkg-1.0-cp312-abi3-manylinux_2_34_x86_64.whl"),
  };
  EXPECT_EQ(select_best_wheel(wheels, supported), 2u);
  // A build tag breaks a tie; no build tag sorts lowest.
  std::vector<WheelFilename> builds = {
      w("pkg-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"),
      w("pkg-1.0-2-cp312-cp312-manylinux_2_28_x86_64.whl"),
      w("pkg-1.0-10-cp312-cp312-manylinux_2_28_x86_64.whl"),
      w("pkg-1.0-10a-cp312-cp312-manylinux_2_28_x86_64.whl"),
  };
  EXPECT_EQ(select_best_wheel(builds, supported), 3u);
  // A higher version wins over a better tag, as in pip.
  std::vector<WheelFilename> versions = {
      w("pkg-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"),
      w("pkg-1.1-py3-none-any.whl"),
  };
  EXPECT_EQ(select_best_wheel(versions, supported), 1u);
  std::vector<WheelFilename> none = {w("pkg-1.0-cp312-cp312-win_amd64.whl")};
  EXPECT_FALSE(select_best_wheel(none, supported));
  EXPECT_FALSE(select_best_wheel({}, supported));
  // Compressed tag sets count by their best member; tags compare case-insensitively.
  std::vector<WheelFilename> compressed = {
      w("pkg-1.0-py3-none-any.whl"),
      w("pkg-1.0-py3-none-MANYLINUX2014_X86_64.manylinux_2_17_x86_64.whl"),
  };
  EXPECT_EQ(select_best_wheel(compressed, supported), 1u);
}

}  // namespace
}  // namespace venvfix::pep
