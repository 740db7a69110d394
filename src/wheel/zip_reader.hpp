// A thin RAII wrapper over libarchive's seekable zip reader (the central directory is read, as
// pip's zipfile reads it), over a file or over memory. Private to the wheel module: the only
// place <archive.h> is included is zip_reader.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"

struct archive;

namespace venvfix::wheel::detail {

enum class EntryType { file, directory, symlink, hardlink, other };

struct ZipEntry {
  // UTF-8, as stored (directories end with '/'): the central directory's bytes where they can
  // be matched to libarchive's entry (see ZipReader), else libarchive's converted name.
  std::string name;
  bool name_ok = true;  // false: libarchive could not give the name as UTF-8, or it had a NUL
  EntryType type = EntryType::file;
  std::uint32_t permissions = 0;  // the low 12 bits of the mode
  bool encrypted = false;
  std::optional<std::uint64_t> size;  // the header's uncompressed size
};

class ZipReader {
 public:
  static Result<ZipReader> open_file(const fs::path& path, std::string display_name);
  static Result<ZipReader> open_memory(std::span<const std::byte> data, std::string display_name);

  ZipReader(ZipReader&& other) noexcept;
  ZipReader& operator=(ZipReader&&) = delete;
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;
  ~ZipReader();

  // The next entry, or nullopt after the last one.
  Result<std::optional<ZipEntry>> next();

  // Inflates the current entry, handing each block to `sink`. Fails (naming the member) when
  // the archive is corrupt, the CRC disagrees, or more than `limit` bytes come out (the caller
  // passes the size it expects; reading stops right after the limit). Returns the byte count.
  using Sink = std::function<Status(std::span<const std::byte>)>;
  Result<std::uint64_t> read_data(const std::string& member, std::uint64_t limit, const Sink& sink);

 private:
  ZipReader(struct archive* archive, std::string display_name)
      : m_archive(archive), m_display(std::move(display_name)) {}
  Error archive_error(std::string_view what) const;
  // libarchive composes every UTF-8 name to NFC and converts through the locale's charset;
  // pip keeps the central directory's bytes. The bounds-checked index of the same bytes
  // (zip_index.hpp) gives those, entry for entry in libarchive's order (by local header
  // offset), as long as the two views agree on every entry (see index_name()).
  void read_index(std::span<const std::byte> data);
  std::optional<std::string> index_name(const ZipEntry& entry);

  struct archive* m_archive = nullptr;
  std::string m_display;
  struct IndexName {
    std::string name;
    std::uint64_t size = 0;
  };
  std::vector<IndexName> m_index;  // empty: libarchive's names are used
  std::size_t m_position = 0;      // entries returned by next() so far
};

}  // namespace venvfix::wheel::detail
