// json_text (include/venvfix/base/json_text.hpp) and is_valid_utf8 (base/utf8.hpp), judged by
// nlohmann's own strict dump(), which refuses exactly the strings that are not UTF-8.
#include "venvfix/base/json_text.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "venvfix/base/utf8.hpp"

namespace venvfix {
namespace {

// Whether nlohmann's strict dump() takes `text` as a string.
bool nlohmann_takes(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

TEST(JsonText, Utf8IsWhatTheJsonLibraryAcceptsForHandPickedEdges) {
  const std::vector<std::pair<std::string, bool>> cases = {
      {"", true},
      {"plain ascii", true},
      {"caf\xc3\xa9", true},        // U+00E9
      {"\xe2\x82\xac", true},       // U+20AC
      {"\xf0\x9f\x90\x8d", true},   // U+1F40D
      {"\xf4\x8f\xbf\xbf", true},   // U+10FFFF, the last
      {"caf\xe9", false},           // Latin-1
      {"\xc0\x80", false},          // overlong NUL
      {"\xc1\xbf", false},          // overlong
      {"\xe0\x80\xaf", false},      // overlong '/'
      {"\xed\xa0\x80", false},      // a surrogate
      {"\xf4\x90\x80\x80", false},  // above U+10FFFF
      {"\xf5\x80\x80\x80", false},  // no such lead byte
      {"\xe2\x82", false},          // cut short
      {"\x80", false},              // a lone continuation
      {"\xff", false},
  };
  for (const auto& [text, valid] : cases) {
    SCOPED_TRACE(testing::PrintToString(text));
    EXPECT_EQ(is_valid_utf8(text), valid);
    EXPECT_EQ(nlohmann_takes(text), valid);
  }
}

// Short strings of bytes drawn mostly from around the lead and continuation boundaries: the two
// judges agree on every one.
TEST(JsonText, Utf8AgreesWithTheJsonLibraryOnRandomBytes) {
  const std::vector<unsigned char> alphabet = {'a',  0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf,
                                               0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed,
                                               0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff};
  std::mt19937 random(20261206);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> length(1, 6);
  int valid = 0;
  for (int round = 0; round < 200000; ++round) {
    std::string text;
    for (int i = length(random); i > 0; --i) text += static_cast<char>(alphabet[pick(random)]);
    const bool ours = is_valid_utf8(text);
    ASSERT_EQ(ours, nlohmann_takes(text)) << testing::PrintToString(text);
    valid += ours ? 1 : 0;
  }
  EXPECT_GT(valid, 1000);  // both kinds were drawn
}

// A document with a string that is not UTF-8 is written, each such byte as U+FFFD, and reads back
// as JSON.
TEST(JsonText, ADocumentWithANameThatIsNotUtf8IsWrittenNotThrown) {
  const nlohmann::json document = {{"added", {"lib/caf\xe9.py", "lib/ok.py"}}};
  const std::string text = json_text(document, 2);
  const nlohmann::json back = nlohmann::json::parse(text);
  EXPECT_EQ(back["added"][0], "lib/caf\xef\xbf\xbd.py");
  EXPECT_EQ(back["added"][1], "lib/ok.py");
}

}  // namespace
}  // namespace venvfix
