// Bounds-checked reading of a binary image (bloaty's StrictSubstr/CheckedAdd, without
// exceptions): the ld.so.cache reader and the zip central-directory index use it.
//
// A read outside the image returns 0 (or an empty view) and marks the reader failed; a parser
// reads the fields of a record and then checks `failed()` once before trusting any of them. No
// read ever touches a byte outside the span; `has` cannot overflow, and checked_add is for
// offsets a caller adds up from fields of the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace venvfix {

// a + b, or nullopt when the sum does not fit in 64 bits.
constexpr std::optional<std::uint64_t> checked_add(std::uint64_t a, std::uint64_t b) {
  if (a > UINT64_MAX - b) return std::nullopt;
  return a + b;
}

class ByteReader {
 public:
  explicit ByteReader(std::span<const std::byte> bytes) : m_bytes(bytes) {}

  std::size_t size() const { return m_bytes.size(); }
  // Whether [offset, offset + count) lies inside the image (no overflow possible).
  bool has(std::uint64_t offset, std::uint64_t count) const {
    return offset <= m_bytes.size() && count <= m_bytes.size() - offset;
  }
  bool failed() const { return m_failed; }

  // Little-endian unsigned integers at `offset`.
  std::uint16_t u16(std::uint64_t offset) { return static_cast<std::uint16_t>(le(offset, 2)); }
  std::uint32_t u32(std::uint64_t offset) { return static_cast<std::uint32_t>(le(offset, 4)); }
  std::uint64_t u64(std::uint64_t offset) { return le(offset, 8); }

  // The bytes [offset, offset + count) as text (StrictSubstr); empty and failed when outside.
  std::string_view text(std::uint64_t offset, std::uint64_t count);
  // Whether the image holds `expected` at `offset` (false, without failing, when outside).
  bool starts_with(std::uint64_t offset, std::string_view expected) const;
  // The NUL-terminated string at `offset` whose NUL lies before `limit` (clamped to the
  // image), or nullopt; does not mark the reader failed (callers name the bad entry).
  std::optional<std::string_view> c_string(std::uint64_t offset,
                                           std::uint64_t limit = UINT64_MAX) const;

 private:
  std::uint64_t le(std::uint64_t offset, int width);

  std::span<const std::byte> m_bytes;
  bool m_failed = false;
};

}  // namespace venvfix
