#include "venvfix/pep/marker.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace venvfix::pep {
namespace {

MarkerEnvironment linux_312() {
  MarkerEnvironment env =
      marker_environment_for(TargetPython{3, 12, "cp", "x86_64", {{2, 36}}, {}, "3.12.3"});
  env.platform_release = "6.1.0-13-amd64";
  env.platform_version = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.55-1";
  return env;
}

bool eval(std::string_view text, const MarkerEnvironment& env,
          const std::set<std::string>& extras = {}) {
  auto marker = Marker::parse(text);
  EXPECT_TRUE(marker) << text << ": " << marker.error().message;
  return marker && marker->evaluate(env, extras);
}

TEST(PepMarker, EnvironmentForCPythonOnLinux) {
  MarkerEnvironment env =
      marker_environment_for(TargetPython{3, 12, "cp", "aarch64", {{2, 28}}, {}, ""});
  EXPECT_EQ(env.python_version, "3.12");
  EXPECT_EQ(env.python_full_version, "3.12.0");
  EXPECT_EQ(env.os_name, "posix");
  EXPECT_EQ(env.sys_platform, "linux");
  EXPECT_EQ(env.platform_system, "Linux");
  EXPECT_EQ(env.platform_machine, "aarch64");
  EXPECT_EQ(env.platform_python_implementation, "CPython");
  EXPECT_EQ(env.implementation_name, "cpython");
  EXPECT_EQ(env.implementation_version, "3.12.0");
  EXPECT_EQ(marker_environment_for(TargetPython{3, 13, "cp", "x86_64", {}, {}, "3.13.0rc1"})
                .implementation_version,
            "3.13.0rc1");
}

TEST(PepMarker, EvaluatesTable) {
  const MarkerEnvironment env = linux_312();
  struct Case {
    std::string marker;
    bool expected;
  };
  const std::vector<Case> cases = {
      {R"(platform_system == "Linux" and platform_machine == "x86_64")", true},
      {R"(platform_system == 'Linux' and platform_machine == 'aarch64')", false},
      {R"(sys_platform == "win32" or platform_machine == "x86_64")", true},
      {R"(python_version < "3.13")", true},
      {R"(python_version < "3.9")", false},
      {R"(python_version >= "3.8")", true},
      {R"(python_version > "3.12")", false},
      {R"(python_version == "3.12.0")", true},  // versions: 3.12 == 3.12.0
      {R"(python_full_version >= "3.12.1")", true},
      {R"(python_full_version == "3.12.*")", true},
      {R"(python_full_version != "3.12.*")", false},
      {R"(python_version ~= "3.10")", true},
      {R"(python_version ~= "3.13.0")", false},
      {R"(python_version === "3.12")", true},
      {R"(implementation_name == "cpython")", true},
      {R"(platform_python_implementation != "PyPy")", true},
      {R"(os_name == "posix")", true},
      {R"("linux" in sys_platform)", true},
      {R"("win" not in sys_platform)", true},
      {R"(platform_machine in "x86_64 aarch64")", true},
      {R"(platform_machine not  in "ppc64le s390x")", true},
      {R"(platform_release >= "6")", true},  // "6.1.0-13-amd64" is no version: strings compare
      {R"(platform_release < "10")", false},
      {R"(platform_version >= "#1")", true},
      {R"(implementation_version >= "3.12")", true},
      {R"(os.name == "posix" and sys.platform == "linux")", true},
      {R"(platform.machine == "x86_64" and python_implementation == "CPython")", true},
      {R"("3.8" <= python_version)", true},
      {R"(os_name ~= "posix")", false},  // packaging raises; venvfix says false
      {R"((python_version < "3.9" or python_version >= "3.12") and os_name == "posix")", true},
      {R"(python_version < "3.9" or python_version >= "3.12" and os_name == "nt")", false},
      {R"(python_version >= "3" and (os_name == "nt" or (sys_platform == "linux")))", true},
      {"python_version>='3.8'and os_name=='posix'", true},
      {R"(os_name == "")", false},
      {R"(extra == "cuda")", false},
      {R"(extra == "")", true},
  };
  for (const auto& c : cases) EXPECT_EQ(eval(c.marker, env), c.expected) << c.marker;
}

TEST(PepMarker, PrereleasePythonCountsAsVersion) {
  MarkerEnvironment env = linux_312();
  env.python_full_version = "3.13.0rc1";
  // packaging >= 22 compares marker versions with pre-releases allowed.
  EXPECT_TRUE(eval(R"(python_full_version >= "3.8")", env));
  EXPECT_FALSE(eval(R"(python_full_version >= "3.13")", env));
}

TEST(PepMarker, ExtrasAreNormalizedAndAnyExtraCounts) {
  const MarkerEnvironment env = linux_312();
  EXPECT_TRUE(eval(R"(extra == "cublas")", env, {"cublas"}));
  EXPECT_TRUE(eval(R"(extra == "CuBLAS")", env, {"cublas"}));
  EXPECT_TRUE(eval(R"(extra == "test_extra")", env, {"Test.Extra"}));
  EXPECT_TRUE(
      eval(R"(extra == "cudart" and platform_system == "Linux")", env, {"cublas", "cudart"}));
  EXPECT_FALSE(eval(R"(extra == "cufft")", env, {"cublas", "cudart"}));
  // Each extra is tried on its own, as pip does.
  EXPECT_FALSE(eval(R"(extra == "cublas" and extra == "cudart")", env, {"cublas", "cudart"}));
  EXPECT_TRUE(eval(R"(extra != "cublas")", env, {"cublas", "cudart"}));
  EXPECT_TRUE(eval(R"(platform_system == "Linux")", env, {"cublas"}));
}

TEST(PepMarker, TextRoundTrips) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"python_version>='3.8'", R"(python_version >= "3.8")"},
      {"(os_name=='nt')", R"(os_name == "nt")"},
      {"(a_name)", ""},
      {R"(os.name == "posix" and (sys.platform == "linux" or python_implementation != 'PyPy'))",
       R"(os_name == "posix" and (sys_platform == "linux" or platform_python_implementation != "PyPy"))"},
      {R"((os_name == "a") and python_version < "3")",
       R"(os_name == "a" and python_version < "3")"},
      {R"(os_name == "a" and ((python_version < "3" or os_name == "b")))",
       R"(os_name == "a" and (python_version < "3" or os_name == "b"))"},
      {R"(platform_version == 'say "hi"')", R"(platform_version == 'say "hi"')"},
      {R"(python_version not   in "2.7 3.5")", R"(python_version not in "2.7 3.5")"},
  };
  const MarkerEnvironment env = linux_312();
  for (const auto& [input, expected] : cases) {
    auto marker = Marker::parse(input);
    if (expected.empty()) {
      EXPECT_FALSE(marker) << input;
      continue;
    }
    ASSERT_TRUE(marker) << input << ": " << marker.error().message;
    EXPECT_EQ(marker->to_string(), expected);
    auto again = Marker::parse(marker->to_string());
    ASSERT_TRUE(again);
    EXPECT_EQ(again->to_string(), expected);
    EXPECT_EQ(again->evaluate(env), marker->evaluate(env));
  }
}

TEST(PepMarker, RejectsInvalidMarkers) {
  const std::vector<std::string> bad = {
      "",
      "   ",
      "python_version",
      "python_version >=",
      R"(python_version >= "3.8" and)",
      R"(python_version >= "3.8" or or os_name == "nt")",
      R"(python_version = "3.8")",
      R"(python_version >= "3.8)",
      R"(python_version >= '3.8")",
      R"(python_versions >= "3.8")",
      R"(unknown == "x")",
      R"((python_version >= "3.8")",
      R"(python_version >= "3.8"))",
      R"(python_version not "3.8")",
      R"(python_version notin "3.8")",
      R"(python_version >= 3.8)",
      R"(python_version >= "3.8" && os_name == "nt")",
      R"(os_name == "posix" xor os_name == "nt")",
      "()",
      "os_name == \"\xc3\xa9\" \xc3\xa9",
  };
  for (const auto& text : bad) {
    auto marker = Marker::parse(text);
    EXPECT_FALSE(marker) << "accepted: " << text;
    if (!marker) {
      EXPECT_NE(marker.error().message.find("invalid marker"), std::string::npos);
      EXPECT_NE(marker.error().message.find("position"), std::string::npos);
    }
  }
}

TEST(PepMarker, DeepNestingIsAnErrorNotACrash) {
  std::string ok_depth = std::string(Marker::k_max_depth, '(') + R"(os_name == "posix")" +
                         std::string(Marker::k_max_depth, ')');
  EXPECT_TRUE(eval(ok_depth, linux_312()));
  std::string deep = std::string(100000, '(') + R"(os_name == "posix")" + std::string(100000, ')');
  auto marker = Marker::parse(deep);
  ASSERT_FALSE(marker);
  EXPECT_NE(marker.error().message.find("nested deeper"), std::string::npos);
  EXPECT_FALSE(Marker::parse(std::string(100000, '(')));
}

TEST(PepMarker, NonAsciiValuesCompareAsCodePoints) {
  MarkerEnvironment env = linux_312();
  env.platform_version = "\xc3\xa9t\xc3\xa9";  // "été"
  EXPECT_TRUE(eval("platform_version == \"\xc3\xa9t\xc3\xa9\"", env));
  EXPECT_TRUE(eval("platform_version > \"z\"", env));  // U+00E9 > 'z'
}

}  // namespace
}  // namespace venvfix::pep
