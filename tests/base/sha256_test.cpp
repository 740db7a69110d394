#include "venvfix/base/sha256.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>

#include "support/scratch_test.hpp"
#include "support/world.hpp"

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

class Sha256File : public venvfix::testing::ScratchTest {
 protected:
  Sha256File() : ScratchTest("venvfix-sha256-") {}
};

// sha256_file sizes its buffer by the file (4 KiB up to 1 MiB): each size around those bounds
// hashes as coreutils' sha256sum says.
TEST_F(Sha256File, AgreesWithSha256sumAtEverySizeAroundItsBuffer) {
  std::mt19937 random(13);
  for (std::size_t size : {0UL, 1UL, 4095UL, 4096UL, 4097UL, (1UL << 20) - 1, 1UL << 20,
                           (1UL << 20) + 1, (3UL << 20) + 5}) {
    const fs::path file = path("file-" + std::to_string(size));
    std::string bytes(size, '\0');
    for (char& byte : bytes) byte = static_cast<char>(random());
    std::ofstream(file, std::ios::binary) << bytes;
    auto digest = sha256_file(file);
    ASSERT_TRUE(digest) << digest.error().message;
    auto judge = venvfix::testing::run_command({"sha256sum", file.string()});
    ASSERT_EQ(judge.exit_code, 0) << judge.err;
    EXPECT_EQ(to_hex(*digest), judge.out.substr(0, 64)) << size << " bytes";
  }
}

}  // namespace
}  // namespace venvfix
