#include "venvfix/index/select.hpp"

#include <gtest/gtest.h>

namespace venvfix::index {
namespace {

IndexFile file(std::string name, bool yanked = false,
               std::optional<std::string> requires_python = {}) {
  IndexFile f;
  f.url = "https://idx.example/files/" + name;
  f.filename = std::move(name);
  f.yanked = yanked;
  if (yanked) f.yanked_reason = "broken build";
  f.requires_python = std::move(requires_python);
  return f;
}

class IndexSelect : public ::testing::Test {
 protected:
  IndexSelect() {
    target.major = 3;
    target.minor = 12;
    target.full_version = "3.12.4";
    target.arch = "x86_64";
    target.glibc = std::make_pair(2, 35);
    page.project = "demo";
    page.page_url = "https://user:pw@idx.example/simple/demo/";
    page.files = {
        file("demo-1.0.tar.gz"),
        file("demo-2.0-py3-none-any.whl"),
        file("demo-2.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
        file("demo-2.1-cp312-cp312-manylinux_2_17_x86_64.whl", /*yanked=*/true),
        file("demo-2.2-cp312-cp312-manylinux_2_39_x86_64.whl"),  // glibc too new
        file("demo-2.5-py3-none-any.whl", false, ">=3.13"),
        file("demo-3.0-cp313-cp313-manylinux_2_17_x86_64.whl"),
        file("demo-3.1rc1-py3-none-any.whl"),
        file("other-9.0-py3-none-any.whl"),
        file("demo-bad.whl"),
    };
  }

  Result<Candidate> select(std::string_view spec, SelectionLog* log = nullptr) {
    auto specifier = pep::SpecifierSet::parse(spec);
    EXPECT_TRUE(specifier);
    return select_wheel(page, *specifier, target, log);
  }

  pep::TargetPython target;
  ProjectPage page;
};

TEST_F(IndexSelect, NewestCompatibleVersionWithTheBestTag) {
  SelectionLog log;
  auto chosen = select(">=1", &log);
  ASSERT_TRUE(chosen) << chosen.error().message;
  EXPECT_EQ(chosen->file.filename,
            "demo-2.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl");
  EXPECT_EQ(chosen->wheel.version.to_string(), "2.0");
  auto reason = [&](std::string_view name) -> std::string {
    for (const auto& skipped : log.skipped) {
      if (skipped.filename == name) return skipped.reason;
    }
    return "(not skipped)";
  };
  EXPECT_EQ(reason("demo-2.1-cp312-cp312-manylinux_2_17_x86_64.whl"), "yanked (broken build)");
  EXPECT_EQ(reason("demo-2.5-py3-none-any.whl"), "requires Python >=3.13, the venv has 3.12.4");
  EXPECT_EQ(reason("demo-2.2-cp312-cp312-manylinux_2_39_x86_64.whl"),
            "no tag this interpreter and platform accept");
  EXPECT_EQ(reason("demo-1.0.tar.gz"), "not a wheel (venvfix installs wheels only)");
  EXPECT_EQ(reason("other-9.0-py3-none-any.whl"), "belongs to other");
  EXPECT_NE(reason("demo-3.1rc1-py3-none-any.whl").find("does not satisfy"), std::string::npos);
  EXPECT_NE(reason("demo-bad.whl").find("not a valid wheel name"), std::string::npos);
}

TEST_F(IndexSelect, YankedOnlyWhenPinned) {
  auto pinned = select("==2.1");
  ASSERT_TRUE(pinned) << pinned.error().message;
  EXPECT_EQ(pinned->file.filename, "demo-2.1-cp312-cp312-manylinux_2_17_x86_64.whl");
  EXPECT_FALSE(select(">=2.1,<2.2"));  // a range is not a pin
}

TEST_F(IndexSelect, PreReleasesOnlyWhenAskedOrWhenNothingElseExists) {
  auto asked = select(">=3.1rc1");
  ASSERT_TRUE(asked);
  EXPECT_EQ(asked->wheel.version.to_string(), "3.1rc1");
  auto unasked = select("");
  ASSERT_TRUE(unasked);
  EXPECT_EQ(unasked->wheel.version.to_string(), "2.0");
  page.files = {file("demo-3.1rc1-py3-none-any.whl")};
  auto only_pre = select("");
  ASSERT_TRUE(only_pre) << only_pre.error().message;
  EXPECT_EQ(only_pre->wheel.version.to_string(), "3.1rc1");
}

TEST_F(IndexSelect, NothingFitsNamesIndexVersionAndTags) {
  auto none = select(">=3");
  ASSERT_FALSE(none);
  const std::string& message = none.error().message;
  EXPECT_EQ(none.error().code, ExitCode::network);
  EXPECT_NE(message.find("demo '>=3'"), std::string::npos) << message;
  EXPECT_NE(message.find("https://***@idx.example/simple/demo/"), std::string::npos) << message;
  EXPECT_EQ(message.find(":pw@"), std::string::npos) << message;
  EXPECT_NE(message.find("Python 3.12 (cp312-cp312-manylinux_2_35_x86_64"), std::string::npos)
      << message;
  EXPECT_NE(message.find("3.0, has only cp313-cp313-manylinux_2_17_x86_64"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace venvfix::index
