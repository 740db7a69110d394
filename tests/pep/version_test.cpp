#include "venvfix/pep/version.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace venvfix::pep {
namespace {

Version v(std::string_view text) {
  auto parsed = Version::parse(text);
  EXPECT_TRUE(parsed) << text << ": " << (parsed ? "" : parsed.error().message);
  return parsed ? *parsed : Version{};
}

TEST(PepVersion, NormalizesEverySpelling) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1.0", "1.0"},
      {"1", "1"},
      {"01.02.003", "1.2.3"},
      {"v1.0", "1.0"},
      {"V1.0", "1.0"},
      {"  1.0\t\n", "1.0"},
      {"0!1.0", "1.0"},
      {"1!1.0", "1!1.0"},
      {"001!1.0", "1!1.0"},
      {"1.0a1", "1.0a1"},
      {"1.0A1", "1.0a1"},
      {"1.0alpha1", "1.0a1"},
      {"1.0-alpha-1", "1.0a1"},
      {"1.0.alpha.1", "1.0a1"},
      {"1.0_a_1", "1.0a1"},
      {"1.0a", "1.0a0"},
      {"1.0a.", "1.0a0"},
      {"1.0b2", "1.0b2"},
      {"1.0beta2", "1.0b2"},
      {"1.0c3", "1.0rc3"},
      {"1.0pre3", "1.0rc3"},
      {"1.0preview3", "1.0rc3"},
      {"1.0RC3", "1.0rc3"},
      {"1.0-1", "1.0.post1"},
      {"1.0post1", "1.0.post1"},
      {"1.0.post", "1.0.post0"},
      {"1.0-post-2", "1.0.post2"},
      {"1.0rev3", "1.0.post3"},
      {"1.0r4", "1.0.post4"},
      {"1.0dev", "1.0.dev0"},
      {"1.0-dev-5", "1.0.dev5"},
      {"1.0-dev-", "1.0.dev0"},
      {"1.0.DEV5", "1.0.dev5"},
      {"1.0a1.post2.dev3", "1.0a1.post2.dev3"},
      {"1.0a1-2", "1.0a1.post2"},
      {"1.0a-1", "1.0a1"},
      {"1.0a.-1", "1.0a0.post1"},
      {"1.0.post1.dev2", "1.0.post1.dev2"},
      {"1.0+abc", "1.0+abc"},
      {"1.0+ABC.5", "1.0+abc.5"},
      {"1.0+Ubuntu-1_2", "1.0+ubuntu.1.2"},
      {"1.0+007.abc", "1.0+7.abc"},
      {"1.0+000", "1.0+0"},
      {"2.8.0+cu128", "2.8.0+cu128"},
      {"1!2.0rc1.post3.dev4+Abc.05", "1!2.0rc1.post3.dev4+abc.5"},
      {"1.0\x1c", "1.0"},  // Python's str.isspace() takes \x1c-\x1f as whitespace
  };
  for (const auto& [input, canonical] : cases) {
    auto parsed = Version::parse(input);
    ASSERT_TRUE(parsed) << input << ": " << parsed.error().message;
    EXPECT_EQ(parsed->to_string(), canonical) << input;
    // The canonical form is a fixed point.
    EXPECT_EQ(v(canonical).to_string(), canonical);
  }
}

TEST(PepVersion, RejectsInvalidStrings) {
  const std::vector<std::string> bad = {
      "",
      " ",
      "a",
      "1.0.",
      ".1",
      "1..0",
      "1.0a1a2",
      "1.0-",
      "1.0_",
      "1.0+",
      "1.0+.abc",
      "1.0+abc.",
      "1.0+abc..def",
      "1.0+a b",
      "1.0 .post1",
      "1!",
      "!1",
      "1!2!3",
      "1.0dev1dev2",
      "1.0.post1.post2",
      "1.0-1-1",
      "1.0alpha1beta2",
      "vv1.0",
      "1.0rc1c",
      "1.0.*",
      "1.0.x",
      "1.0ab",
      "1.0gamma",
      "1.0-foo",
      "1,0",
      "1.0\xc2\xa0",  // no-break space is not ASCII
      "\xe2\x91\xa0",
      std::string("1.0\0", 4),
      "1.0.0-rc.1+build.1\n2",
      "1.0+abc_",
      "latest",
      "2.0.0-beta.1.3",
  };
  for (const auto& input : bad) {
    auto parsed = Version::parse(input);
    EXPECT_FALSE(parsed) << "accepted: " << input << " as " << (parsed ? parsed->to_string() : "");
  }
}

TEST(PepVersion, ErrorNamesTextAndPosition) {
  auto parsed = Version::parse("1.0x");
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("\"1.0x\""), std::string::npos) << parsed.error().message;
  EXPECT_NE(parsed.error().message.find("position 3"), std::string::npos) << parsed.error().message;
  EXPECT_EQ(parsed.error().code, ExitCode::usage);
}

// One long, hand-sorted list: every adjacent pair must compare strictly less, and the whole
// order must be transitive (checked over all pairs).
TEST(PepVersion, OrdersAsOneSortedSequence) {
  const std::vector<std::string> sorted = {
      "0.1",
      "0.9.dev0",
      "1.0.dev456",
      "1.0a1.dev1",
      "1.0a1",
      "1.0a1.post1.dev1",
      "1.0a1.post1",
      "1.0a2.dev456",
      "1.0a12.dev456",
      "1.0a12",
      "1.0b1.dev456",
      "1.0b2",
      "1.0b2.post345.dev456",
      "1.0b2.post345",
      "1.0b2-346",
      "1.0c1.dev456",
      "1.0c1",
      "1.0rc2",
      "1.0c3",
      "1.0",
      "1.0+abc",
      "1.0+abc.5",
      "1.0+abc.7",
      "1.0+5",
      "1.0+5.abc",
      "1.0+6",
      "1.0.post456.dev34",
      "1.0.post456",
      "1.0.post456+local",
      "1.0.0.0.0.1",  // beyond the four-number fast key: the general comparison
      "1.0.1",
      "1.1.dev1",
      "1.1a1",
      "1.1",
      "1.2+123abc",
      "1.2+123abc456",
      "1.2+abc",
      "1.2+abc123",
      "1.2+abc123def",
      "1.2+1234.abc",
      "1.2+123456",
      "1.10",
      "2.0",
      "2.0.0.1",
      "18446744073709551615",
      "18446744073709551616",
      "99999999999999999999999",
      "1!0.1",
      "1!1.0",
      "2!0.0.dev0",
  };
  std::vector<Version> versions;
  versions.reserve(sorted.size());
  for (const auto& s : sorted) versions.push_back(v(s));
  for (std::size_t i = 0; i < versions.size(); ++i) {
    for (std::size_t j = 0; j < versions.size(); ++j) {
      EXPECT_EQ(versions[i] <=> versions[j], i <=> j) << sorted[i] << " vs " << sorted[j];
    }
  }
}

TEST(PepVersion, EqualityIgnoresSpellingAndTrailingZeros) {
  EXPECT_EQ(v("1.0"), v("1.0.0"));
  EXPECT_EQ(v("1"), v("1.0.0.0.0"));
  EXPECT_EQ(v("1.0.0.0.0.0.0"), v("1"));  // key and general paths agree
  EXPECT_EQ(v("1.2.3.4.5") <=> v("1.2.3.4"), std::strong_ordering::greater);
  EXPECT_EQ(v("1.2.3.4") <=> v("1.2.3.4.5"), std::strong_ordering::less);
  EXPECT_EQ(v("1.0+ABC"), v("1.0+abc"));
  EXPECT_EQ(v("1.0+1"), v("1.0+01"));
  EXPECT_EQ(v("1.0a"), v("1.0alpha0"));
  EXPECT_EQ(v("0!1.0"), v("1.0"));
  EXPECT_NE(v("1.0"), v("1.0+0"));
  EXPECT_NE(v("1.0"), v("1.0.post0"));
  EXPECT_NE(v("1.0"), v("1.0.dev0"));
  EXPECT_NE(v("1.0+a.b"), v("1.0+a-b.c"));
  EXPECT_LT(v("1.0.dev1"), v("1.0a1"));
  EXPECT_LT(v("1.0.post1.dev2"), v("1.0.post1"));
  EXPECT_GT(v("1.0.post1.dev2"), v("1.0"));
}

TEST(PepVersion, Accessors) {
  Version x = v("3!1.2.3rc4.post5.dev6+Local.7");
  EXPECT_EQ(x.epoch(), 3);
  ASSERT_EQ(x.release().size(), 3u);
  EXPECT_EQ(x.release()[2], 3u);
  EXPECT_EQ(x.pre_kind(), Version::PreKind::rc);
  EXPECT_EQ(x.pre_number(), 4u);
  EXPECT_EQ(x.post(), 5u);
  EXPECT_EQ(x.dev(), 6u);
  EXPECT_EQ(x.local(), "local.7");
  EXPECT_EQ(x.public_version(), "3!1.2.3rc4.post5.dev6");
  EXPECT_EQ(x.base_version(), "3!1.2.3");
  EXPECT_TRUE(x.is_prerelease());
  EXPECT_TRUE(x.is_postrelease());
  EXPECT_TRUE(x.is_devrelease());

  Version final = v("2.8.0+cu128");
  EXPECT_FALSE(final.is_prerelease());
  EXPECT_FALSE(final.is_postrelease());
  EXPECT_EQ(final.public_version(), "2.8.0");
  EXPECT_EQ(final.local(), "cu128");
  EXPECT_TRUE(v("1.0.dev0").is_prerelease());
  EXPECT_TRUE(v("1.0b1").is_prerelease());
  EXPECT_FALSE(v("1.0.post1").is_prerelease());
  EXPECT_FALSE(v("1.0").pre_number().has_value());
}

TEST(PepVersion, HugeNumbersAreExact) {
  std::string huge = "1." + std::string(10000, '9');
  Version a = v(huge);
  EXPECT_EQ(a.to_string(), huge);
  EXPECT_EQ(a.release()[1], UINT64_MAX);  // saturated accessor
  std::string bigger = "1.1" + std::string(10000, '0');
  EXPECT_LT(a, v(bigger));
  EXPECT_EQ(v("1.000000000000000000000000000005"), v("1.5"));
  EXPECT_EQ(v("1.000000000000000000000000000005").to_string(), "1.5");
  EXPECT_LT(v("18446744073709551615"), v("18446744073709551616"));
  EXPECT_LT(v("1.0+18446744073709551616"), v("1.0+18446744073709551617"));
  EXPECT_LT(v("1.0+9"), v("1.0+18446744073709551617"));
  EXPECT_EQ(v("99999999999999999999999!1.0").epoch(), INT_MAX);
  EXPECT_GT(v("99999999999999999999999!1.0"), v("99999999999999999999998!1.0"));
  EXPECT_LT(v("1.0a99999999999999999999998"), v("1.0a99999999999999999999999"));
  EXPECT_LT(v("1.0.post99999999999999999999"), v("1.0.post100000000000000000000"));
}

}  // namespace
}  // namespace venvfix::pep
