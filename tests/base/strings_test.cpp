// base/strings: find_first_of_few against std::string_view::find_first_of, which it replaces
// on hot paths (RECORD lines, snapshot manifests); split_lines' line ends.
#include "venvfix/base/strings.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace venvfix {
namespace {

// Python's universal newlines (what `open()` in text mode and email.feedparser split at).
TEST(Strings, SplitLinesEndsLinesAtLfCrlfAndLoneCr) {
  using Lines = std::vector<std::string_view>;
  EXPECT_EQ(split_lines(""), Lines{});
  EXPECT_EQ(split_lines("a"), Lines{"a"});
  EXPECT_EQ(split_lines("a\n"), Lines{"a"});
  EXPECT_EQ(split_lines("a\r\nb\rc\nd"), (Lines{"a", "b", "c", "d"}));
  EXPECT_EQ(split_lines("\n\r\n\r"), (Lines{"", "", ""}));
  EXPECT_EQ(split_lines("a\r\r\nb"), (Lines{"a", "", "b"}));
  EXPECT_EQ(split_lines("a\fb\x85"
                        "c"),
            Lines{"a\fb\x85"
                  "c"});
}

TEST(Strings, FindFirstOfFewAgreesWithFindFirstOf) {
  const std::string sets[] = {"\r\n",    "%\n\r\t", ",\"\r\n", "", "x\n", std::string("\0,", 2),
                              "\xff\x80"};
  std::mt19937 random(13);
  const std::string alphabet = std::string("ab,%\"\t\r\nx\xff\x80 ") + std::string(1, '\0');
  for (int round = 0; round < 2000; ++round) {
    std::string text(random() % 40, 'a');
    for (char& c : text) c = alphabet[random() % alphabet.size()];
    const std::size_t start = random() % (text.size() + 2);
    for (const std::string& set : sets) {
      EXPECT_EQ(find_first_of_few(text, set, start),
                std::string_view(text).find_first_of(set, start))
          << "text of " << text.size() << " bytes, start " << start << ", set of " << set.size();
    }
  }
}

}  // namespace
}  // namespace venvfix
