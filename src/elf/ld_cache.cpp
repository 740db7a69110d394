// /etc/ld.so.cache reader. Layout and lookup follow glibc's sysdeps/generic/dl-cache.h and
// elf/dl-cache.c (search_cache, _dl_cache_libcmp); see docs/resolver.md.
#include "venvfix/elf/ld_cache.hpp"

#include <algorithm>
#include <cstring>

#include "venvfix/base/byte_reader.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix::elf {

namespace {

constexpr std::string_view k_old_magic = "ld.so-1.7.0";           // CACHEMAGIC
constexpr std::string_view k_new_magic = "glibc-ld.so.cache1.1";  // CACHEMAGIC_VERSION_NEW
constexpr std::size_t k_old_header = 16;  // char magic[11]; (pad 1) uint32 nlibs
constexpr std::size_t k_old_entry = 12;   // int32 flags; uint32 key, value
constexpr std::size_t k_new_header = 48;  // sizeof (struct cache_file_new)
constexpr std::size_t k_new_entry = 24;   // flags, key, value, osversion, uint64 hwcap
constexpr std::uint64_t k_hwcap_extension = 1ULL << 62;  // DL_CACHE_HWCAP_EXTENSION
constexpr std::uint32_t k_isa_level_mask = (1U << 10) - 1;
constexpr std::uint32_t k_extension_magic = static_cast<std::uint32_t>(-358342284);
constexpr std::uint32_t k_tag_glibc_hwcaps = 1;
constexpr std::uint64_t k_hwcap_tls = 1ULL << 63;

// ldconfig's FLAG_* values (elf/ldconfig.h / sysdeps/generic/ldconfig.h).
constexpr std::int32_t k_flag_elf = 0x0001;
constexpr std::int32_t k_flag_elf_libc6 = 0x0003;
constexpr std::int32_t k_flag_x8664_lib64 = 0x0300;
constexpr std::int32_t k_flag_s390_lib64 = 0x0400;
constexpr std::int32_t k_flag_powerpc_lib64 = 0x0500;
constexpr std::int32_t k_flag_x8664_libx32 = 0x0800;
constexpr std::int32_t k_flag_aarch64_lib64 = 0x0a00;
constexpr std::int32_t k_flag_riscv_float_abi_double = 0x1000;

Error corrupt(std::string_view name, std::string_view what) {
  return make_error(ExitCode::error, "{}: corrupt ld.so.cache: {}", name, what);
}

// The names of the glibc-hwcaps extension section, by index; empty when absent. Malformed
// extensions are ignored, as glibc's cache_extension_load does (the cache stays usable; only
// hwcaps entries lose their names and are then never chosen).
std::vector<std::string> load_hwcaps_names(ByteReader& image, std::size_t new_base) {
  std::vector<std::string> names;
  const std::uint32_t ext_offset = image.u32(new_base + 32);
  if (ext_offset == 0 || ext_offset % 4 != 0 || !image.has(ext_offset, 8)) return names;
  if (image.u32(ext_offset) != k_extension_magic) return names;
  const std::uint32_t count = image.u32(ext_offset + 4);
  if (!image.has(ext_offset + 8, static_cast<std::size_t>(count) * 16)) return names;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t section = ext_offset + 8 + static_cast<std::size_t>(i) * 16;
    const std::uint32_t tag = image.u32(section);
    const std::uint32_t offset = image.u32(section + 8);
    const std::uint32_t size = image.u32(section + 12);
    if (!image.has(offset, size)) return {};
    if (tag != k_tag_glibc_hwcaps) continue;
    if (size == 0 || offset % 4 != 0 || size % 4 != 0) continue;
    names.clear();
    for (std::uint32_t j = 0; j < size / 4; ++j) {
      // Indexes into the string table, which for the new format starts at the file start.
      auto text = image.c_string(image.u32(offset + j * 4));
      names.emplace_back(text.value_or(std::string_view()));
    }
  }
  return names;
}

struct Accepted {
  std::int32_t default_id;
  std::int32_t alternative;  // also accepted (0: none)
};

// _DL_CACHE_DEFAULT_ID and _dl_cache_check_flags of the glibc built for this class/machine
// (sysdeps/.../dl-cache.h). x86-64, x32, aarch64, s390x, ppc64 and riscv64 accept only their
// own id; the generic definition (i386, arm, …) accepts 1 and 3.
Accepted accepted_flags(ElfClass elf_class, std::uint16_t machine) {
  const bool is64 = elf_class == ElfClass::elf64;
  switch (machine) {
    case k_machine_x86_64:
      return is64 ? Accepted{k_flag_x8664_lib64 | k_flag_elf_libc6, 0}
                  : Accepted{k_flag_x8664_libx32 | k_flag_elf_libc6, 0};
    case k_machine_aarch64:
      return {k_flag_aarch64_lib64 | k_flag_elf_libc6, 0};
    case k_machine_s390:
      return is64 ? Accepted{k_flag_s390_lib64 | k_flag_elf_libc6, 0}
                  : Accepted{k_flag_elf_libc6, k_flag_elf};
    case k_machine_ppc64:
      return {k_flag_powerpc_lib64 | k_flag_elf_libc6, 0};
    case k_machine_riscv:
      return is64 ? Accepted{k_flag_riscv_float_abi_double | k_flag_elf_libc6, 0}
                  : Accepted{k_flag_elf_libc6, k_flag_elf};
    default:
      return {k_flag_elf_libc6, k_flag_elf};
  }
}

}  // namespace

int cache_name_compare(std::string_view left, std::string_view right) {
  // A transcription of _dl_cache_libcmp over bounded strings (the end acts as NUL).
  std::size_t i = 0;
  std::size_t j = 0;
  auto at = [](std::string_view s, std::size_t k) -> int {
    return k < s.size() ? static_cast<unsigned char>(s[k]) : 0;
  };
  auto digit = [](int c) { return c >= '0' && c <= '9'; };
  while (at(left, i) != 0) {
    if (digit(at(left, i))) {
      if (!digit(at(right, j))) return 1;
      // Compare the runs of digits numerically; glibc does it in int arithmetic, which only
      // matters for absurdly long runs. Compare without overflow: strip leading zeros, then by
      // length, then lexically.
      std::size_t a0 = i;
      while (digit(at(left, i))) ++i;
      std::size_t b0 = j;
      while (digit(at(right, j))) ++j;
      std::string_view a = left.substr(a0, i - a0);
      std::string_view b = right.substr(b0, j - b0);
      while (a.size() > 1 && a.front() == '0') a.remove_prefix(1);
      while (b.size() > 1 && b.front() == '0') b.remove_prefix(1);
      if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
      if (int c = a.compare(b); c != 0) return c < 0 ? -1 : 1;
    } else if (digit(at(right, j))) {
      return -1;
    } else if (at(left, i) != at(right, j)) {
      return at(left, i) - at(right, j);
    } else {
      ++i;
      ++j;
    }
  }
  return at(left, i) - at(right, j);
}

Result<LdCache> LdCache::load(const fs::path& path) {
  VENVFIX_TRY_ASSIGN(MappedFile mapped, MappedFile::open(path));
  return parse(mapped.bytes(), path.string());
}

namespace {

// Where the tables start (glibc's _dl_load_cache_lookup): the new-format table, if any, and
// the count of old-format entries (0 without an old table).
struct Tables {
  std::optional<std::size_t> new_base;
  std::size_t old_count = 0;
};

Result<Tables> find_tables(ByteReader& image, std::string_view name) {
  Tables tables;
  if (image.starts_with(0, k_new_magic)) {
    if (image.size() <= k_new_header) return corrupt(name, "truncated header");
    tables.new_base = 0;
    return tables;
  }
  if (!image.starts_with(0, k_old_magic)) {
    return corrupt(name, "unknown magic (neither \"glibc-ld.so.cache1.1\" nor \"ld.so-1.7.0\")");
  }
  if (image.size() <= k_old_header) return corrupt(name, "truncated header");
  tables.old_count = image.u32(12);
  if ((image.size() - k_old_header) / k_old_entry < tables.old_count) {
    return corrupt(
        name, fmt::format("{} entries do not fit in {} bytes", tables.old_count, image.size()));
  }
  // ALIGN_CACHE: the embedded new table is 8-byte aligned after the old entries.
  std::size_t offset = k_old_header + tables.old_count * k_old_entry;
  offset = (offset + 7) & ~static_cast<std::size_t>(7);
  if (image.has(offset, k_new_header) && image.starts_with(offset, k_new_magic)) {
    tables.new_base = offset;
  }
  return tables;
}

// The entries of the new-format table at `base`; its string offsets count from `base`.
Result<std::vector<LdCache::Entry>> read_new_table(ByteReader& image, std::size_t base,
                                                   std::string_view name) {
  const std::uint32_t count = image.u32(base + 20);
  if ((image.size() - base - k_new_header) / k_new_entry < count) {
    return corrupt(name, fmt::format("{} entries do not fit in {} bytes", count, image.size()));
  }
  const auto endian = image.text(base + 28, 1);
  if (image.failed()) return corrupt(name, "truncated header");
  if ((endian[0] & 3) == 1 || (endian[0] & 3) == 3) {  // invalid, or big-endian: not for this host
    return corrupt(name, "written for another byte order");
  }
  const std::vector<std::string> hwcaps_names = load_hwcaps_names(image, base);
  std::vector<LdCache::Entry> entries;
  entries.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t at = base + k_new_header + static_cast<std::size_t>(i) * k_new_entry;
    LdCache::Entry entry;
    entry.flags = static_cast<std::int32_t>(image.u32(at));
    auto soname = image.c_string(base + image.u32(at + 4));
    auto path = image.c_string(base + image.u32(at + 8));
    entry.hwcap = image.u64(at + 16);
    if (!soname || !path || image.failed()) {
      return corrupt(name, fmt::format("entry {} has a string offset outside the file", i));
    }
    entry.soname = std::string(*soname);
    entry.path = std::string(*path);
    entry.is_hwcaps_entry = ((entry.hwcap >> 32) & ~static_cast<std::uint64_t>(k_isa_level_mask)) ==
                            (k_hwcap_extension >> 32);
    if (entry.is_hwcaps_entry) {
      const auto index = static_cast<std::uint32_t>(entry.hwcap & 0xffffffffU);
      if (index < hwcaps_names.size()) entry.glibc_hwcaps = hwcaps_names[index];
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

// The entries of an old-format-only cache; its strings count from the end of the entry table.
Result<std::vector<LdCache::Entry>> read_old_table(ByteReader& image, std::size_t count,
                                                   std::string_view name) {
  const std::size_t strings = k_old_header + count * k_old_entry;
  std::vector<LdCache::Entry> entries;
  entries.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t at = k_old_header + i * k_old_entry;
    LdCache::Entry entry;
    entry.flags = static_cast<std::int32_t>(image.u32(at));
    auto soname = image.c_string(strings + image.u32(at + 4));
    auto path = image.c_string(strings + image.u32(at + 8));
    if (!soname || !path || image.failed()) {
      return corrupt(name, fmt::format("entry {} has a string offset outside the file", i));
    }
    entry.soname = std::string(*soname);
    entry.path = std::string(*path);
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace

Result<LdCache> LdCache::parse(std::span<const std::byte> bytes, std::string_view name) {
  ByteReader image(bytes);
  VENVFIX_TRY_ASSIGN(Tables tables, find_tables(image, name));
  LdCache cache;
  if (tables.new_base) {
    VENVFIX_TRY_ASSIGN(cache.m_entries, read_new_table(image, *tables.new_base, name));
  } else {
    VENVFIX_TRY_ASSIGN(cache.m_entries, read_old_table(image, tables.old_count, name));
  }
  return cache;
}

std::optional<std::string> LdCache::find(std::string_view soname, ElfClass elf_class,
                                         std::uint16_t machine,
                                         std::span<const std::string> glibc_hwcaps) const {
  const Accepted accepted = accepted_flags(elf_class, machine);
  auto flags_ok = [&](std::int32_t flags) {
    return flags == accepted.default_id ||
           (accepted.alternative != 0 && flags == accepted.alternative);
  };
  // glibc binary-searches the table (sorted by ldconfig in descending _dl_cache_libcmp order),
  // backs up to the first entry of the name and walks forward. Done the same way here so that
  // an unsorted (hand-made) cache gives the answer ld.so gives.
  const auto& entries = m_entries;
  std::ptrdiff_t left = 0;
  std::ptrdiff_t right = static_cast<std::ptrdiff_t>(entries.size()) - 1;
  while (left <= right) {
    std::ptrdiff_t middle = left + (right - left) / 2;
    const int cmp = cache_name_compare(soname, entries[static_cast<std::size_t>(middle)].soname);
    if (cmp == 0) {
      while (middle > 0 && cache_name_compare(
                               soname, entries[static_cast<std::size_t>(middle - 1)].soname) == 0) {
        --middle;
      }
      const std::string* best = nullptr;
      std::size_t best_priority = 0;
      for (auto k = static_cast<std::size_t>(middle); k <= static_cast<std::size_t>(right); ++k) {
        const Entry& entry = entries[k];
        if (cache_name_compare(soname, entry.soname) != 0) break;
        if (!flags_ok(entry.flags)) continue;
        if (entry.is_hwcaps_entry) {
          // Priority = position in the supported list (1 = best); 0 = not usable here.
          auto it = std::find(glibc_hwcaps.begin(), glibc_hwcaps.end(), entry.glibc_hwcaps);
          if (entry.glibc_hwcaps.empty() || it == glibc_hwcaps.end()) continue;
          const auto priority = static_cast<std::size_t>(it - glibc_hwcaps.begin()) + 1;
          if (best != nullptr && priority >= best_priority) continue;
          best_priority = priority;
          best = &entry.path;
          continue;
        }
        // hwcaps entries come first; once anything was chosen, the next usable base entry
        // ends the search (glibc: "if (!named_hwcap && best != NULL) break;").
        if (best != nullptr) break;
        // Legacy hwcap bits (libraries in tls/ or platform subdirectories): only the TLS bit
        // is taken as supported; see docs/resolver.md.
        if ((entry.hwcap & ~k_hwcap_tls) != 0) continue;
        best = &entry.path;
        if (entry.flags == accepted.default_id) break;
      }
      if (best == nullptr) return std::nullopt;
      return *best;
    }
    if (cmp < 0) {
      left = middle + 1;
    } else {
      right = middle - 1;
    }
  }
  return std::nullopt;
}

}  // namespace venvfix::elf
