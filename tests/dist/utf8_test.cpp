// is_valid_utf8 against Python's strict UTF-8 decoder, on random byte strings that mix ASCII
// runs of every length (the eight-bytes-at-a-time path starts and stops anywhere) with valid,
// overlong, surrogate, out-of-range and truncated sequences.
#include "venvfix/base/utf8.hpp"

#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "env/test_support.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix::dist {
namespace {

TEST(DistUtf8, AgreesWithPythonsDecoder) {
  const std::vector<std::string> pieces = {
      "a",
      "torch/lib/",
      "0123456789abcdef",
      "é",
      "日本",
      "😀",  // valid
      "\xC0\x80",
      "\xE0\x80\x80",
      "\xF0\x80\x80\x80",  // overlong
      "\xED\xA0\x80",
      "\xED\xBF\xBF",  // surrogates
      "\xF4\x90\x80\x80",
      "\xF8\x88\x80\x80\x80",
      "\xFF",
      "\x80",  // above U+10FFFF, invalid
      "\xC3",
      "\xE6\x97",
      "\xF0\x9F\x98",  // truncated
  };
  std::mt19937 random(20261203);
  std::vector<std::string> texts = {"", std::string(64, 'x'), std::string(64, 'x') + "\xC3"};
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    const std::size_t length = random() % 12;
    for (std::size_t k = 0; k < length; ++k) {
      // Mostly ASCII, as real paths are, so that whole words pass the fast path.
      text +=
          random() % 3 != 0 ? std::string(random() % 11, 'p') : pieces[random() % pieces.size()];
    }
    texts.push_back(std::move(text));
  }
  auto dir = TempDir::create("venvfix-utf8-");
  ASSERT_TRUE(dir);
  nlohmann::json input = nlohmann::json::array();
  for (const std::string& text : texts) {
    nlohmann::json bytes = nlohmann::json::array();
    for (char c : text) bytes.push_back(static_cast<unsigned char>(c));
    input.push_back(bytes);
  }
  test_support::write_text(dir->path() / "in.json", input.dump());
  test_support::write_text(dir->path() / "check.py", R"(
import json, sys
def valid(data):
    try:
        bytes(data).decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False
print(json.dumps([valid(d) for d in json.load(open(sys.argv[1]))]))
)");
  auto out = test_support::run_command("python3 " + (dir->path() / "check.py").string() + " " +
                                       (dir->path() / "in.json").string());
  ASSERT_EQ(out.status, 0);
  const auto python = nlohmann::json::parse(out.out);
  ASSERT_EQ(python.size(), texts.size());
  std::size_t valid = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(is_valid_utf8(texts[i]), python[i].get<bool>()) << input[i].dump();
    valid += python[i].get<bool>() ? 1 : 0;
  }
  // Both outcomes are well represented.
  EXPECT_GT(valid, texts.size() / 5);
  EXPECT_LT(valid, texts.size() * 4 / 5);
}

}  // namespace
}  // namespace venvfix::dist
