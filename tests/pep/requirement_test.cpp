#include "venvfix/pep/requirement.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace venvfix::pep {
namespace {

TEST(PepRequirement, ParsesTorchStyleLines) {
  auto r = Requirement::parse(
      R"(nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux" and platform_machine == "x86_64")");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->name, "nvidia-cudnn-cu12");
  EXPECT_TRUE(r->extras.empty());
  EXPECT_EQ(r->specifier.to_string(), "==9.10.2.21");
  EXPECT_TRUE(r->url.empty());
  ASSERT_TRUE(r->marker.has_value());
  EXPECT_EQ(r->marker->to_string(),
            R"(platform_system == "Linux" and platform_machine == "x86_64")");

  auto kit = Requirement::parse("cuda-toolkit[CuBLAS,cudart,cublas]==13.0.2");
  ASSERT_TRUE(kit);
  EXPECT_EQ(kit->extras, (std::vector<std::string>{"cublas", "cudart"}));
  EXPECT_EQ(kit->to_string(), "cuda-toolkit[cublas,cudart]==13.0.2");
}

TEST(PepRequirement, RoundTripTable) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"torch", "torch"},
      {"  torch  ", "torch"},
      {"Foo_Bar.baz>=1.0", "Foo_Bar.baz>=1.0"},
      {"name >= 1.0 , < 2", "name<2,>=1.0"},
      {"name (>=1.0,<2)", "name<2,>=1.0"},
      {"name[]", "name"},
      {"name[ b , a ]>1", "name[a,b]>1"},
      {"name[Extra_One]", "name[extra-one]"},
      {"name; os_name=='nt'", R"(name; os_name == "nt")"},
      {"name>=1 ;python_version<'3.10'", R"(name>=1; python_version < "3.10")"},
      {"name @ https://example.com/name-1.0.whl", "name @ https://example.com/name-1.0.whl"},
      {"name@https://example.com/x.whl", "name @ https://example.com/x.whl"},
      {"name [x] @ file:///tmp/name.whl ; extra == 'x'",
       R"(name[x] @ file:///tmp/name.whl ; extra == "x")"},
      {"name===1.0-foo", "name===1.0-foo"},
      {"nvidia-nccl-cu12==2.27.3; platform_system == \"Linux\"",
       R"(nvidia-nccl-cu12==2.27.3; platform_system == "Linux")"},
      {"name==2.0.*", "name==2.0.*"},
  };
  for (const auto& [input, expected] : cases) {
    auto r = Requirement::parse(input);
    ASSERT_TRUE(r) << input << ": " << r.error().message;
    EXPECT_EQ(r->to_string(), expected) << input;
    auto again = Requirement::parse(r->to_string());
    ASSERT_TRUE(again) << r->to_string();
    EXPECT_EQ(again->to_string(), expected);
  }
}

TEST(PepRequirement, RejectsInvalidLines) {
  const std::vector<std::string> bad = {
      "",
      "   ",
      "-name",
      "name-",
      "na me",
      "name 1.0",
      "name==",
      "name=1.0",
      "name>=1.0,",
      "name>=1.0,,<2",
      "name()",
      "name(>=1.0",
      "name[",
      "name[a,]",
      "name[a b]",
      "name[-a]",
      "name;",
      "name; ",
      "name; os_name",
      "name @",
      "name @ ",
      "name @ not-a-url",
      "name @ https:///no-host",
      "name @ file:relative/path",
      "name @ https://h/x;os_name=='nt' extra",
      "name>=1.0 garbage",
      "name>=1.0+local",
      "n\xc3\xa4me",
  };
  for (const auto& text : bad) {
    auto r = Requirement::parse(text);
    EXPECT_FALSE(r) << "accepted: " << text << " as " << (r ? r->to_string() : "");
    if (!r) {
      EXPECT_NE(r.error().message.find("invalid"), std::string::npos) << r.error().message;
    }
  }
}

}  // namespace
}  // namespace venvfix::pep
