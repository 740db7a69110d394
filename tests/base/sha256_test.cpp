#include "venvfix/base/sha256.hpp"

#include <gtest/gtest.h>

namespace venvfix {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(to_hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(to_hex(sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, IncrementalEqualsWhole) {
  Sha256 hasher;
  hasher.update(std::string_view("a"));
  hasher.update(std::string_view("bc"));
  EXPECT_EQ(hasher.finish(), sha256("abc"));
}

TEST(Sha256, Base64UrlMatchesRecordFormat) {
  // python3 -c "import
  // hashlib,base64;print(base64.urlsafe_b64encode(hashlib.sha256(b'abc').digest()).rstrip(b'='))"
  EXPECT_EQ(to_base64url_nopad(sha256("abc")), "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
  auto back = sha256_from_base64url("ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, sha256("abc"));
}

TEST(Sha256, RejectsMalformedDigests) {
  EXPECT_FALSE(sha256_from_hex("zz"));
  EXPECT_FALSE(sha256_from_hex(std::string(64, 'g')));
  EXPECT_FALSE(sha256_from_base64url("short"));
  EXPECT_FALSE(sha256_from_base64url(std::string(43, '*')));
}

}  // namespace
}  // namespace venvfix
