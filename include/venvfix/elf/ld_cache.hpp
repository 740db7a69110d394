// /etc/ld.so.cache, read the way glibc's dynamic loader reads it (elf/dl-cache.c).
//
// Supported: the new format ("glibc-ld.so.cache1.1", glibc >= 2.2, the only one ldconfig
// writes by default since 2.32), including glibc-hwcaps entries (DL_CACHE_HWCAP_EXTENSION,
// glibc >= 2.33), and the old "ld.so-1.7.0" format, alone or with the new one embedded after
// it (ldconfig -c compat). When both are present the new table is used, as glibc does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/elf/elf_file.hpp"

namespace venvfix::elf {

class LdCache {
 public:
  struct Entry {
    std::string soname;
    std::string path;
    std::int32_t flags = 0;    // FLAG_ELF_LIBC6 | FLAG_X8664_LIB64, …
    std::uint64_t hwcap = 0;   // legacy hwcap bits, or DL_CACHE_HWCAP_EXTENSION | index
    std::string glibc_hwcaps;  // for hwcaps entries: the subdirectory name, e.g. "x86-64-v3"
    bool is_hwcaps_entry = false;
  };

  // Reads and parses a cache file. A missing file is an Error (SystemView treats it as "no
  // cache", as ld.so does).
  static Result<LdCache> load(const fs::path& path);
  // Parses a cache image; `name` names it in messages. A corrupt cache is an Error naming
  // `name` and the defect (glibc silently ignores such a cache; callers decide).
  static Result<LdCache> parse(std::span<const std::byte> image, std::string_view name);

  // The path ld.so would take from the cache for `soname` for an object of this class and
  // machine: glibc's search_cache(). `glibc_hwcaps` lists the glibc-hwcaps subdirectories this
  // CPU supports, best first (SystemView::glibc_hwcaps); hwcaps entries of other names are
  // skipped, and the best supported one wins over the base entry, as in glibc >= 2.33.
  std::optional<std::string> find(std::string_view soname, ElfClass elf_class,
                                  std::uint16_t machine,
                                  std::span<const std::string> glibc_hwcaps = {}) const;

  std::size_t size() const { return m_entries.size(); }
  // Entries in file order (which ldconfig sorts for glibc's binary search).
  const std::vector<Entry>& entries() const { return m_entries; }

 private:
  std::vector<Entry> m_entries;
};

// glibc's _dl_cache_libcmp: compares names with embedded numbers numerically. ldconfig sorts
// the cache with it (descending) and ld.so binary-searches with it.
int cache_name_compare(std::string_view left, std::string_view right);

}  // namespace venvfix::elf
