#include "venvfix/base/log.hpp"

#include <gtest/gtest.h>

namespace venvfix {
namespace {

TEST(RedactUrl, RemovesUserInfo) {
  EXPECT_EQ(redact_url("https://user:secret@example.org/simple/"),
            "https://***@example.org/simple/");
  EXPECT_EQ(redact_url("https://token@example.org"), "https://***@example.org");
  EXPECT_EQ(redact_url("https://example.org/a@b"), "https://example.org/a@b");
  EXPECT_EQ(redact_url("file:///tmp/x"), "file:///tmp/x");
  EXPECT_EQ(redact_url("not a url"), "not a url");
}

}  // namespace
}  // namespace venvfix
