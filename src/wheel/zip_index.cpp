#include "wheel/zip_index.hpp"

#include <cstring>
#include <string_view>
#include <unordered_map>

#include "venvfix/base/byte_reader.hpp"
#include "wheel/member_name.hpp"

namespace venvfix::wheel::detail {

namespace {

constexpr std::uint32_t k_eocd64_locator_sig = 0x07064b50;
constexpr std::uint32_t k_eocd64_sig = 0x06064b50;
constexpr std::size_t k_eocd_size = 22;
constexpr std::size_t k_central_size = 46;

struct Directory {
  std::uint64_t entries = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

std::optional<Directory> find_directory(ByteReader& b) {
  if (b.size() < k_eocd_size) return std::nullopt;
  // The end record is the last thing in the file, followed only by its comment (< 64 KiB).
  std::size_t lowest = b.size() - k_eocd_size > 0xFFFF ? b.size() - k_eocd_size - 0xFFFF : 0;
  std::optional<std::size_t> eocd;
  for (std::size_t at = b.size() - k_eocd_size + 1; at-- > lowest;) {
    if (b.u32(at) == k_eocd_sig && at + k_eocd_size + b.u16(at + 20) == b.size()) {
      eocd = at;
      break;
    }
  }
  if (!eocd) return std::nullopt;
  const std::size_t e = *eocd;
  if (b.u16(e + 4) != 0 || b.u16(e + 6) != 0) return std::nullopt;  // multi-disk
  Directory dir{b.u16(e + 10), b.u32(e + 16), b.u32(e + 12)};
  if (dir.entries == 0xFFFF || dir.offset == 0xFFFFFFFF || dir.size == 0xFFFFFFFF) {
    if (e < 20 || b.u32(e - 20) != k_eocd64_locator_sig) return std::nullopt;
    std::uint64_t at = b.u64(e - 20 + 8);
    if (!b.has(at, 56) || b.u32(at) != k_eocd64_sig) return std::nullopt;
    if (b.u32(at + 16) != 0 || b.u32(at + 20) != 0) return std::nullopt;
    dir = Directory{b.u64(at + 32), b.u64(at + 48), b.u64(at + 40)};
  }
  if (b.failed() || !b.has(dir.offset, dir.size)) return std::nullopt;
  // Every entry takes at least 46 bytes: a count beyond that is a lie, not an allocation.
  if (dir.entries > dir.size / k_central_size) return std::nullopt;
  return dir;
}

}  // namespace

namespace {

// The central-directory record at `at` (ending before `end`) and its local header; returns the
// offset of the next record, or nullopt when anything is out of place.
std::optional<std::uint64_t> read_entry(ByteReader& b, std::uint64_t at, std::uint64_t end,
                                        std::uint64_t directory_offset, ZipIndexEntry& entry) {
  if (at + k_central_size > end || b.u32(at) != k_central_sig) return std::nullopt;
  entry.flags = b.u16(at + 8);
  entry.method = b.u16(at + 10);
  entry.crc32 = b.u32(at + 16);
  entry.compressed_size = b.u32(at + 20);
  entry.size = b.u32(at + 24);
  const std::uint64_t name_len = b.u16(at + 28);
  const std::uint64_t extra_len = b.u16(at + 30);
  const std::uint64_t comment_len = b.u16(at + 32);
  std::uint64_t local = b.u32(at + 42);
  const std::uint64_t next = at + k_central_size + name_len + extra_len + comment_len;
  if (next > end) return std::nullopt;
  // Bit 11: the name is UTF-8 (checked by libarchive, which read_wheel trusts); without it,
  // CP437 as zipfile reads it, so that the names match read_wheel's member for member.
  const std::string_view stored = b.text(at + k_central_size, name_len);
  entry.name = (entry.flags & 0x800) != 0 ? std::string(stored) : cp437_to_utf8(stored);
  if (!apply_zip64(b, at + k_central_size + name_len, extra_len, entry.size, entry.compressed_size,
                   &local)) {
    return std::nullopt;
  }
  // The local header must name the same member; the data follows it and its extra field,
  // and ends before the central directory.
  if (!b.has(local, k_local_size) || b.u32(local) != k_local_sig) return std::nullopt;
  const std::uint64_t local_name_len = b.u16(local + 26);
  const std::uint64_t local_extra_len = b.u16(local + 28);
  if (local_name_len != name_len || b.text(local + k_local_size, name_len) != stored) {
    return std::nullopt;
  }
  entry.data_offset = local + k_local_size + local_name_len + local_extra_len;
  if (b.failed() || entry.data_offset > directory_offset ||
      entry.compressed_size > directory_offset - entry.data_offset) {
    return std::nullopt;
  }
  return next;
}

}  // namespace

bool apply_zip64(ByteReader& b, std::uint64_t extra, std::uint64_t extra_len, std::uint64_t& size,
                 std::uint64_t& compressed_size, std::uint64_t* local_offset) {
  bool need_size = size == 0xFFFFFFFF;
  bool need_csize = compressed_size == 0xFFFFFFFF;
  bool need_offset = local_offset != nullptr && *local_offset == 0xFFFFFFFF;
  if (!need_size && !need_csize && !need_offset) return true;
  std::uint64_t at = extra;
  const std::uint64_t end = extra + extra_len;
  while (at + 4 <= end) {
    std::uint16_t id = b.u16(at);
    std::uint16_t len = b.u16(at + 2);
    if (at + 4 + len > end) return false;
    if (id == 0x0001) {
      std::uint64_t field = at + 4;
      const std::uint64_t field_end = field + len;
      auto take = [&](std::uint64_t& value) {
        if (field + 8 > field_end) return false;
        value = b.u64(field);
        field += 8;
        return true;
      };
      if (need_size && !take(size)) return false;
      if (need_csize && !take(compressed_size)) return false;
      if (need_offset && !take(*local_offset)) return false;
      return !b.failed();
    }
    at += 4 + len;
  }
  return false;
}

std::optional<std::vector<ZipIndexEntry>> read_zip_index(std::span<const std::byte> data) {
  ByteReader b(data);
  std::optional<Directory> dir = find_directory(b);
  if (!dir) return std::nullopt;
  std::vector<ZipIndexEntry> out;
  out.reserve(static_cast<std::size_t>(dir->entries));
  std::uint64_t at = dir->offset;
  const std::uint64_t end = dir->offset + dir->size;
  for (std::uint64_t i = 0; i < dir->entries; ++i) {
    ZipIndexEntry entry;
    std::optional<std::uint64_t> next = read_entry(b, at, end, dir->offset, entry);
    if (!next) return std::nullopt;
    out.push_back(std::move(entry));
    at = *next;
  }
  return out;
}

std::optional<std::vector<std::size_t>> match_members(const WheelContents& contents,
                                                      const std::vector<ZipIndexEntry>& entries) {
  std::unordered_map<std::string_view, std::size_t> by_name;
  by_name.reserve(contents.members.size());
  for (std::size_t i = 0; i < contents.members.size(); ++i) by_name[contents.members[i].name] = i;
  std::vector<std::size_t> out(contents.members.size(), entries.size());
  std::size_t matched = 0;
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const ZipIndexEntry& entry = entries[k];
    auto it = by_name.find(entry.name);
    if (it == by_name.end()) {
      if (entry.name.ends_with('/')) continue;  // a directory entry
      return std::nullopt;
    }
    const std::size_t i = it->second;
    if (out[i] != entries.size() || entry.size != contents.members[i].size ||
        (entry.flags & 0x1) != 0) {
      return std::nullopt;
    }
    out[i] = k;
    ++matched;
  }
  if (matched != contents.members.size()) return std::nullopt;
  return out;
}

}  // namespace venvfix::wheel::detail
