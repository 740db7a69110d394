#include "venvfix/pep/specifier.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace venvfix::pep {
namespace {

Version v(std::string_view text) {
  auto parsed = Version::parse(text);
  EXPECT_TRUE(parsed) << text;
  return parsed ? *parsed : Version{};
}

struct Case {
  std::string set;
  std::string version;
  bool expected;
  PreReleases pre = PreReleases::unless_asked;
};

TEST(PepSpecifier, ContainsTable) {
  const std::vector<Case> cases = {
      // plain comparisons
      {">=2.0", "2.0", true},
      {">=2.0", "1.9", false},
      {">2.0", "2.0", false},
      {">2.0", "2.0.1", true},
      {"<2.0", "1.9.9", true},
      {"<=2.0", "2.0.0", true},
      {"==2.0", "2", true},
      {"==2.0", "2.0.0.0", true},
      {"!=2.0", "2.0.1", true},
      {"!=2.0", "2.0.0", false},
      {"", "1.0", true},
      {"", "1.0a1", false},
      {"", "1.0a1", true, PreReleases::allow},
      {">=1.0,<2.0", "1.5", true},
      {">=1.0,<2.0", "2.0", false},
      {">= 1.0 , < 2.0", "1.5", true},
      // local versions
      {"==2.8.0", "2.8.0+cu128", true},
      {"==2.8.0+cu128", "2.8.0+cu128", true},
      {"==2.8.0+cu128", "2.8.0+cu126", false},
      {"==2.8.0+cu128", "2.8.0", false},
      {"!=2.8.0", "2.8.0+cu128", false},
      {"!=2.8.0+cu126", "2.8.0+cu128", true},
      {"<=2.8.0", "2.8.0+cu128", true},
      {">=2.8.0", "2.8.0+cu128", true},
      {">2.8.0", "2.8.0+cu128", false},  // not a local of the bound
      {">2.8.0", "2.8.1+cu128", true},
      {"<2.8.0", "2.7.1+cu128", true},
      // pre-releases
      {">=1.0", "2.0a1", false},
      {">=1.0", "2.0a1", true, PreReleases::allow},
      {">=1.0a1", "2.0a1", true},  // the clause asks for pre-releases
      {">=1.0", "2.0a1", false, PreReleases::deny},
      {">=1.0a1", "2.0a1", false, PreReleases::deny},
      {"<1.0a2", "1.0a1", false},  // < never asks for pre-releases
      {"<1.0a2", "1.0a1", true, PreReleases::allow},
      {"==1.0.dev1", "1.0.dev1", true},
      {">=1.0,>=0.5a1", "1.5a1", true},  // one clause asks: the whole set allows
      // <V excludes pre-releases of V; >V excludes post-releases of V
      {"<3.1", "3.1.dev0", false, PreReleases::allow},
      {"<3.1", "3.1rc1", false, PreReleases::allow},
      {"<3.1", "3.0.dev0", true, PreReleases::allow},
      {"<3.1rc2", "3.1rc1", false},  // < does not ask for pre-releases
      {"<3.1rc2", "3.1rc1", true, PreReleases::allow},
      {"<3.1rc2", "3.1.dev0", true, PreReleases::allow},
      {">3.1", "3.1.post1", false},
      {">3.1", "3.2.post1", true},
      {">3.1.post1", "3.1.post2", true},
      {">3.1", "3.1.0.1", true},
      // ~=
      {"~=2.2", "2.3", true},
      {"~=2.2", "3.0", false},
      {"~=2.2", "2.1", false},
      {"~=2.2.0", "2.2.5", true},
      {"~=2.2.0", "2.3", false},
      {"~=1.4.5a4", "1.4.5", true},
      {"~=1.4.5a4", "1.4.5a3", false, PreReleases::allow},
      {"~=1.4.5a4", "1.5", false},
      {"~=2.2.post3", "2.3", true},
      {"~=2.2.post3", "2.2", false},
      {"~=1!2.2", "1!2.5", true},
      {"~=1!2.2", "2.5", false},
      {"~=9.1", "9.1+cu12", true},
      // prefix matching
      {"==12.*", "12.8.93", true},
      {"==12.*", "13.0", false},
      {"==12.8.*", "12.8", true},
      {"==1.0.*", "1", true},
      {"==1.0.0.*", "1.0", true},
      {"==1.0.0.*", "1.0a1", true, PreReleases::allow},
      {"==0.0.*", "0.post1", true},
      {"!=0.0.*", "0.post1", false},
      {"==1.*", "1!1.0", false},
      {"==1!1.*", "1!1.2", true},
      {"==1!1.0.*", "1!1", true},
      {"==2.0.*", "2.0+local", true},
      {"==2.0a1.*", "2.0a1.post1", true},
      {"==2.0a1.*", "2.0a2", false, PreReleases::allow},
      {"!=12.*", "12.1", false},
      {"!=12.*", "11.9", true},
      {"==1.1.*", "1.10", false},
      // ===
      {"===1.0", "1.0", true},
      {"===1.0", "1.0.0", false},
      {"===1.0+ABC", "1.0+abc", true},
      {"===foobar", "1.0", false},
      // huge numbers
      {">=1.18446744073709551616", "1.18446744073709551617", true},
      {"<1.18446744073709551616", "1.18446744073709551615", true},
      {"==1.99999999999999999999999.*", "1.99999999999999999999999.5", true},
  };
  for (const auto& c : cases) {
    auto set = SpecifierSet::parse(c.set);
    ASSERT_TRUE(set) << c.set << ": " << set.error().message;
    EXPECT_EQ(set->contains(v(c.version), c.pre), c.expected)
        << "\"" << c.set << "\" contains " << c.version << " (pre mode " << static_cast<int>(c.pre)
        << ")";
  }
}

TEST(PepSpecifier, RejectsInvalidClauses) {
  const std::vector<std::string> bad = {
      "2.0",          "=2.0",        "=>2.0",     "~=2",          "~=2.*",
      ">=2.*",        "<2.0.*",      ">=1.0+abc", "<1.0+local",   "~=1.0+abc",
      "==1.0.dev1.*", "==1.0+abc.*", "== 1.0 .*", "==1.0 1",      ">=",
      "==",           ">=abc",       "==1..0",    ">=1.0,,abc",   "=== a b",
      "!==1.0",       "==1.0.*.*",   "<>1.0",     ">= 1.0 extra", "==\xc3\xa9",
  };
  for (const auto& text : bad) {
    auto parsed = SpecifierSet::parse(text);
    EXPECT_FALSE(parsed) << "accepted: " << text;
    if (!parsed) {
      EXPECT_NE(parsed.error().message.find("invalid version specifier"), std::string::npos);
    }
  }
}

TEST(PepSpecifier, TextIsSortedAndDeduplicated) {
  EXPECT_EQ(SpecifierSet::parse("<2, >=1.0 ,!=1.5")->to_string(), "!=1.5,<2,>=1.0");
  EXPECT_EQ(SpecifierSet::parse(">=1.0,>=1.0.0,>=1")->to_string(), ">=1.0");
  EXPECT_EQ(SpecifierSet::parse("~=1.0,~=1.0.0")->to_string(), "~=1.0,~=1.0.0");
  EXPECT_EQ(SpecifierSet::parse(",, ,")->to_string(), "");
  EXPECT_TRUE(SpecifierSet::parse("")->empty());
  EXPECT_EQ(SpecifierSet::parse("== 1.0a1")->to_string(), "==1.0a1");
  EXPECT_EQ(SpecifierSet::parse("==v1.0alpha1")->to_string(), "==v1.0alpha1");  // as written
  auto spec = Specifier::parse("~=2.2.0");
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->op(), Specifier::Operator::compatible);
  EXPECT_EQ(spec->version_text(), "2.2.0");
}

std::vector<std::string> filtered(std::string_view set, const std::vector<std::string>& versions,
                                  PreReleases pre = PreReleases::unless_asked) {
  std::vector<Version> input;
  input.reserve(versions.size());
  for (const auto& s : versions) input.push_back(v(s));
  std::vector<std::string> out;
  for (const auto& x : SpecifierSet::parse(set)->filter(input, pre)) out.push_back(x.to_string());
  return out;
}

TEST(PepSpecifier, FilterFollowsPackaging) {
  using L = std::vector<std::string>;
  EXPECT_EQ(filtered("", {"1.0", "2.0a1", "1.5"}), (L{"1.0", "1.5"}));
  // Nothing but pre-releases: an empty set gives them back.
  EXPECT_EQ(filtered("", {"2.0a1", "2.0b1"}), (L{"2.0a1", "2.0b1"}));
  EXPECT_EQ(filtered("", {"2.0a1", "2.0b1"}, PreReleases::deny), (L{}));
  EXPECT_EQ(filtered("", {"1.0", "2.0a1"}, PreReleases::allow), (L{"1.0", "2.0a1"}));
  // With clauses packaging passes bool(prereleases) down, so no fallback (pip needs --pre).
  EXPECT_EQ(filtered(">=1.0", {"2.0a1", "2.0b1"}), (L{}));
  EXPECT_EQ(filtered(">=1.0", {"0.5", "1.0", "2.0a1", "3.0"}), (L{"1.0", "3.0"}));
  EXPECT_EQ(filtered(">=1.0a1", {"0.5", "1.0", "2.0a1", "3.0"}), (L{"1.0", "2.0a1", "3.0"}));
  EXPECT_EQ(filtered(">=1.0", {"2.0a1", "3.0"}, PreReleases::allow), (L{"2.0a1", "3.0"}));
}

}  // namespace
}  // namespace venvfix::pep
