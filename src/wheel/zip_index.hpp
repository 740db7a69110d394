// Where each member's compressed bytes lie: a bounds-checked reading of the zip central
// directory (and each member's local header), for the parallel unpacker, which inflates members
// straight out of the archive's bytes. libarchive stays the reader that decides what a wheel
// holds (read_wheel); this index is only trusted where it agrees with it, member for member
// (match_members), and every byte it leads to is still checked against RECORD's sha256 and the
// zip CRC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "venvfix/base/byte_reader.hpp"
#include "venvfix/wheel/wheel.hpp"

namespace venvfix::wheel::detail {

// The zip format's record signatures and the local header's fixed size (APPNOTE 4.3).
constexpr std::uint32_t k_local_sig = 0x04034b50;
constexpr std::uint32_t k_central_sig = 0x02014b50;
constexpr std::uint32_t k_eocd_sig = 0x06054b50;
constexpr std::size_t k_local_size = 30;

// The zip64 extended information extra field (0x0001), in [extra, extra + extra_len) of `b`,
// replaces the fields that hold all ones, in this order: size, compressed size, local header
// offset (only with `local_offset`: a local header's extra field has no offset). False when a
// field that holds all ones has no value there.
bool apply_zip64(ByteReader& b, std::uint64_t extra, std::uint64_t extra_len, std::uint64_t& size,
                 std::uint64_t& compressed_size, std::uint64_t* local_offset);

struct ZipIndexEntry {
  std::string name;  // UTF-8: as stored with the UTF-8 flag, else decoded from CP437
  std::uint16_t method = 0;
  std::uint16_t flags = 0;
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t size = 0;
  std::uint64_t data_offset = 0;  // of the compressed bytes: after the local header
};

// The entries of the archive in `data`, or nullopt when anything about its layout is unusual
// (multi-disk, a local header that does not match, sizes or offsets beyond the data): the
// caller then streams through libarchive instead. Never reads outside `data`.
std::optional<std::vector<ZipIndexEntry>> read_zip_index(std::span<const std::byte> data);

// For each member of `contents` (in order), the position in `entries` of the entry with its
// name; nullopt unless the file entries of the index are exactly the members (same names, no
// duplicates, same sizes, not encrypted).
std::optional<std::vector<std::size_t>> match_members(const WheelContents& contents,
                                                      const std::vector<ZipIndexEntry>& entries);

}  // namespace venvfix::wheel::detail
