#include "venvfix/pep/tags.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace venvfix::pep {
namespace {

std::vector<std::string> strings(const std::vector<Tag>& tags) {
  std::vector<std::string> out;
  out.reserve(tags.size());
  for (const auto& t : tags) out.push_back(t.to_string());
  return out;
}

std::ptrdiff_t index_of(const std::vector<std::string>& list, const std::string& item) {
  auto it = std::find(list.begin(), list.end(), item);
  return it == list.end() ? -1 : it - list.begin();
}

TEST(PepTags, ManylinuxPlatformsForX86) {
  TargetPython t{3, 12, "cp", "x86_64", {{2, 36}}, {}, ""};
  auto p = linux_platform_tags(t);
  ASSERT_EQ(p.size(), 32u + 3u + 1u);  // 2_36 .. 2_5, three legacy aliases, linux_x86_64
  EXPECT_EQ(p.front(), "manylinux_2_36_x86_64");
  EXPECT_EQ(p[index_of(p, "manylinux_2_17_x86_64") + 1], "manylinux2014_x86_64");
  EXPECT_EQ(p[index_of(p, "manylinux_2_12_x86_64") + 1], "manylinux2010_x86_64");
  EXPECT_EQ(p[index_of(p, "manylinux_2_5_x86_64") + 1], "manylinux1_x86_64");
  EXPECT_EQ(p.back(), "linux_x86_64");
}

TEST(PepTags, ManylinuxPlatformsForAarch64StopAt2_17) {
  TargetPython t{3, 12, "cp", "aarch64", {{2, 28}}, {}, ""};
  auto p = linux_platform_tags(t);
  EXPECT_EQ(p, (std::vector<std::string>{
                   "manylinux_2_28_aarch64", "manylinux_2_27_aarch64", "manylinux_2_26_aarch64",
                   "manylinux_2_25_aarch64", "manylinux_2_24_aarch64", "manylinux_2_23_aarch64",
                   "manylinux_2_22_aarch64", "manylinux_2_21_aarch64", "manylinux_2_20_aarch64",
                   "manylinux_2_19_aarch64", "manylinux_2_18_aarch64", "manylinux_2_17_aarch64",
                   "manylinux2014_aarch64", "linux_aarch64"}));
}

TEST(PepTags, MusllinuxAndUnknownArch) {
  TargetPython musl{3, 11, "cp", "x86_64", {}, {{1, 2}}, ""};
  EXPECT_EQ(linux_platform_tags(musl),
            (std::vector<std::string>{"musllinux_1_2_x86_64", "musllinux_1_1_x86_64",
                                      "musllinux_1_0_x86_64", "linux_x86_64"}));
  TargetPython odd{3, 11, "cp", "sparc64", {{2, 36}}, {}, ""};
  EXPECT_EQ(linux_platform_tags(odd), (std::vector<std::string>{"linux_sparc64"}));
}

TEST(PepTags, CPythonOrder) {
  TargetPython t{3, 12, "cp", "x86_64", {{2, 17}}, {}, ""};
  // platforms: manylinux_2_17 .. 2_5 (13) + 3 aliases + linux = 17
  auto tags = strings(supported_tags(t));
  const std::size_t n = 17;
  EXPECT_EQ(tags[0], "cp312-cp312-manylinux_2_17_x86_64");
  EXPECT_EQ(tags[1], "cp312-cp312-manylinux2014_x86_64");
  EXPECT_EQ(tags[n - 1], "cp312-cp312-linux_x86_64");
  EXPECT_EQ(tags[n], "cp312-abi3-manylinux_2_17_x86_64");
  EXPECT_EQ(tags[2 * n], "cp312-none-manylinux_2_17_x86_64");
  EXPECT_EQ(tags[3 * n], "cp311-abi3-manylinux_2_17_x86_64");
  EXPECT_EQ(index_of(tags, "cp32-abi3-linux_x86_64"), static_cast<std::ptrdiff_t>(13 * n - 1));
  EXPECT_EQ(index_of(tags, "cp31-abi3-linux_x86_64"), -1);
  EXPECT_EQ(tags[13 * n], "py312-none-manylinux_2_17_x86_64");
  EXPECT_EQ(tags[14 * n], "py3-none-manylinux_2_17_x86_64");
  EXPECT_EQ(tags[15 * n], "py311-none-manylinux_2_17_x86_64");
  // py312, py3, py311..py30 = 14 interpreters on each platform, then the `any` tail.
  const std::vector<std::string> tail = {"cp312-none-any", "py312-none-any", "py3-none-any",
                                         "py311-none-any"};
  EXPECT_EQ(tags[27 * n], tail[0]);
  EXPECT_EQ(tags[27 * n + 1], tail[1]);
  EXPECT_EQ(tags[27 * n + 2], tail[2]);
  EXPECT_EQ(tags[27 * n + 3], tail[3]);
  EXPECT_EQ(tags.back(), "py30-none-any");
  EXPECT_EQ(tags.size(), 27 * n + 1 + 14);
}

TEST(PepTags, OldPythonAbis) {
  auto tags = strings(supported_tags(TargetPython{3, 7, "cp", "x86_64", {}, {}, ""}));
  EXPECT_EQ(tags[0], "cp37-cp37m-linux_x86_64");
  EXPECT_EQ(tags[1], "cp37-abi3-linux_x86_64");
  EXPECT_EQ(tags[2], "cp37-none-linux_x86_64");
}

}  // namespace
}  // namespace venvfix::pep
