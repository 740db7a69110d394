#include "venvfix/dist/metadata.hpp"

#include <gtest/gtest.h>

namespace venvfix::dist {
namespace {

TEST(DistMetadata, ParsesHeadersUpToTheBody) {
  auto metadata = parse_metadata(
      "Metadata-Version: 2.1\n"
      "Name: torch\n"
      "Version: 2.8.0+cu128\n"
      "Summary: Tensors\n"
      "requires-dist: filelock\n"
      "Requires-Dist: nvidia-cudnn-cu12==9.10.2.21; platform_system == \"Linux\"\n"
      "Provides-Extra: opt-einsum\n"
      "Requires-Python: >=3.9.0\n"
      "\n"
      "Requires-Dist: not-a-header-this-is-the-body\n",
      "METADATA");
  ASSERT_TRUE(metadata) << metadata.error().message;
  EXPECT_EQ(metadata->metadata_version, "2.1");
  EXPECT_EQ(metadata->name, "torch");
  EXPECT_EQ(metadata->version, "2.8.0+cu128");
  ASSERT_EQ(metadata->requires_dist.size(), 2u);
  EXPECT_EQ(metadata->requires_dist[0], "filelock");
  EXPECT_EQ(metadata->requires_dist[1],
            "nvidia-cudnn-cu12==9.10.2.21; platform_system == \"Linux\"");
  EXPECT_EQ(metadata->provides_extra, std::vector<std::string>{"opt-einsum"});
  EXPECT_EQ(metadata->requires_python, ">=3.9.0");
}

TEST(DistMetadata, ContinuationLinesAndCrlf) {
  auto metadata = parse_metadata(
      "Metadata-Version: 2.1\r\nName: pkg\r\nVersion: 1.0\r\nRequires-Dist: a;\r\n"
      "\tpython_version >= \"3.8\"\r\nDescription: line one\r\n        |line two\r\n\r\nbody",
      "METADATA");
  ASSERT_TRUE(metadata) << metadata.error().message;
  ASSERT_EQ(metadata->requires_dist.size(), 1u);
  EXPECT_EQ(metadata->requires_dist[0], "a; python_version >= \"3.8\"");
  EXPECT_EQ(metadata->version, "1.0");
}

TEST(DistMetadata, FirstValueWinsAndNoBlankLineNeeded) {
  auto metadata = parse_metadata("Name: a\nName: b\nVERSION: 2\rVersion: 3", "PKG-INFO");
  ASSERT_TRUE(metadata) << metadata.error().message;
  EXPECT_EQ(metadata->name, "a");
  EXPECT_EQ(metadata->version, "2");
  EXPECT_TRUE(metadata->metadata_version.empty());
}

TEST(DistMetadata, ANonHeaderLineStartsTheBody) {
  auto metadata =
      parse_metadata("Name: a\nVersion: 1\nthis is not a header\nRequires-Dist: x\n", "METADATA");
  ASSERT_TRUE(metadata);
  EXPECT_TRUE(metadata->requires_dist.empty());
}

TEST(DistMetadata, LatinOneInIgnoredFieldsIsTolerated) {
  auto metadata = parse_metadata("Name: a\nVersion: 1\nAuthor: Jos\xe9\n", "METADATA");
  ASSERT_TRUE(metadata) << metadata.error().message;
}

TEST(DistMetadata, ErrorsNameTheFile) {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", "/m/METADATA has no Name"},
      {"Version: 1\n", "has no Name"},
      {"Name: a\n", "has no Version"},
      {"Name: a\nVersion:\n", "has no Version"},
      {"\nName: a\nVersion: 1\n", "has no Name"},  // headers ended at once
      {"Name: a b\nVersion: 1\n", "not a valid project name"},
      {"Name: a\nVersion: 1 2\n", "is not a version"},
      {"Name: \xff\xfe\nVersion: 1\n", "not valid UTF-8"},
      {"Name: a\nVersion: 1\nRequires-Dist: b\xc0\xaf\n", "Requires-Dist field is not valid UTF-8"},
      {std::string("Name: a\0\nVersion: 1\n", 20), "not valid UTF-8"},
      {std::string(1 << 20, 'x'), "has no Name"},
  };
  for (const Case& c : cases) {
    auto metadata = parse_metadata(c.text, "/m/METADATA");
    ASSERT_FALSE(metadata) << c.message;
    EXPECT_EQ(metadata.error().code, ExitCode::usage);
    EXPECT_NE(metadata.error().message.find("/m/METADATA"), std::string::npos);
    EXPECT_NE(metadata.error().message.find(c.message), std::string::npos)
        << metadata.error().message;
  }
}

}  // namespace
}  // namespace venvfix::dist
