#include "venvfix/base/byte_reader.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

namespace venvfix {
namespace {

std::vector<std::byte> bytes_of(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

TEST(ByteReader, ReadsLittleEndianInsideTheImage) {
  auto data = bytes_of({0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08});
  ByteReader reader(data);
  EXPECT_EQ(reader.u16(0), 0x0201);
  EXPECT_EQ(reader.u32(4), 0x08070605u);
  EXPECT_EQ(reader.u64(0), 0x0807060504030201ull);
  EXPECT_FALSE(reader.failed());
}

TEST(ByteReader, AReadPastTheEndFailsAndReturnsZero) {
  auto data = bytes_of({0xff, 0xff, 0xff});
  ByteReader reader(data);
  EXPECT_EQ(reader.u32(0), 0u);
  EXPECT_TRUE(reader.failed());
  ByteReader other(data);
  EXPECT_EQ(other.u16(2), 0);  // one byte inside, one outside
  EXPECT_TRUE(other.failed());
  ByteReader huge(data);
  EXPECT_EQ(huge.u16(UINT64_MAX), 0);  // offset + width would overflow
  EXPECT_TRUE(huge.failed());
}

TEST(ByteReader, TextIsAStrictSubstring) {
  auto data = bytes_of({'a', 'b', 'c'});
  ByteReader reader(data);
  EXPECT_EQ(reader.text(1, 2), "bc");
  EXPECT_FALSE(reader.failed());
  EXPECT_EQ(reader.text(1, 3), "");
  EXPECT_TRUE(reader.failed());
  EXPECT_FALSE(ByteReader(data).has(UINT64_MAX, 2));
}

TEST(ByteReader, CStringNeedsItsNulBeforeTheLimit) {
  auto data = bytes_of({'l', 'i', 'b', 0, 'x', 'y'});
  ByteReader reader(data);
  EXPECT_EQ(reader.c_string(0), "lib");
  EXPECT_EQ(reader.c_string(1), "ib");
  EXPECT_EQ(reader.c_string(0, 3), std::nullopt);  // NUL at 3 is not before the limit
  EXPECT_EQ(reader.c_string(4), std::nullopt);     // runs off the end
  EXPECT_EQ(reader.c_string(6), std::nullopt);
  EXPECT_FALSE(reader.failed());
  EXPECT_TRUE(reader.starts_with(0, "lib"));
  EXPECT_FALSE(reader.starts_with(4, "xyz"));
}

TEST(ByteReader, CheckedAddRefusesOverflow) {
  EXPECT_EQ(checked_add(1, 2), 3u);
  EXPECT_EQ(checked_add(UINT64_MAX, 0), UINT64_MAX);
  EXPECT_EQ(checked_add(UINT64_MAX, 1), std::nullopt);
}

}  // namespace
}  // namespace venvfix
