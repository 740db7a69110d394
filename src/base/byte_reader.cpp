#include "venvfix/base/byte_reader.hpp"

#include <algorithm>
#include <cstring>

namespace venvfix {

std::uint64_t ByteReader::le(std::uint64_t offset, int width) {
  if (!has(offset, static_cast<std::uint64_t>(width))) {
    m_failed = true;
    return 0;
  }
  std::uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) {
    value = (value << 8) |
            std::to_integer<std::uint64_t>(m_bytes[offset + static_cast<std::uint64_t>(i)]);
  }
  return value;
}

std::string_view ByteReader::text(std::uint64_t offset, std::uint64_t count) {
  if (!has(offset, count)) {
    m_failed = true;
    return {};
  }
  return {reinterpret_cast<const char*>(m_bytes.data()) + offset, count};
}

bool ByteReader::starts_with(std::uint64_t offset, std::string_view expected) const {
  return has(offset, expected.size()) &&
         std::memcmp(m_bytes.data() + offset, expected.data(), expected.size()) == 0;
}

std::optional<std::string_view> ByteReader::c_string(std::uint64_t offset,
                                                     std::uint64_t limit) const {
  limit = std::min<std::uint64_t>(limit, m_bytes.size());
  if (offset >= limit) return std::nullopt;
  const char* start = reinterpret_cast<const char*>(m_bytes.data()) + offset;
  const void* nul = std::memchr(start, '\0', limit - offset);
  if (nul == nullptr) return std::nullopt;
  return std::string_view(start, static_cast<std::size_t>(static_cast<const char*>(nul) - start));
}

}  // namespace venvfix
