#include "wheel/zip_reader.hpp"

#include <locale.h>

#include <algorithm>
#include <cstring>

#include "venvfix/base/utf8.hpp"
#include "wheel/archive_library.hpp"
#include "wheel/zip_index.hpp"

namespace venvfix::wheel::detail {

namespace {

constexpr std::size_t k_read_block = 1u << 20;

// libarchive converts every member name to the charset of the calling thread's locale
// (nl_langinfo(CODESET)), and venvfix never calls setlocale: in the "C" locale a UTF-8 name
// with a non-ASCII character "cannot be converted". Member names are UTF-8 whatever the
// process locale (pip's rule), so every libarchive call runs with a UTF-8 LC_CTYPE for this
// thread only (uselocale), and the process locale is never touched.
locale_t utf8_ctype() {
  static const locale_t k_locale = [] {
    for (const char* name : {"C.UTF-8", "C.utf8", "en_US.UTF-8"}) {
      locale_t made = ::newlocale(LC_CTYPE_MASK, name, static_cast<locale_t>(nullptr));
      if (made != static_cast<locale_t>(nullptr)) return made;
    }
    return static_cast<locale_t>(nullptr);  // names with non-ASCII characters are then refused
  }();
  return k_locale;
}

class Utf8Scope {
 public:
  Utf8Scope() {
    if (locale_t utf8 = utf8_ctype(); utf8 != static_cast<locale_t>(nullptr)) {
      m_previous = ::uselocale(utf8);
    }
  }
  ~Utf8Scope() {
    if (m_previous != static_cast<locale_t>(nullptr)) ::uselocale(m_previous);
  }
  Utf8Scope(const Utf8Scope&) = delete;
  Utf8Scope& operator=(const Utf8Scope&) = delete;

 private:
  locale_t m_previous = static_cast<locale_t>(nullptr);
};

// A zip reader of libarchive; loads libarchive on the first call.
Result<struct archive*> new_zip_archive(const std::string& display_name) {
  VENVFIX_TRY(load_libarchive());
  struct archive* a = libarchive().read_new();
  if (a == nullptr) return make_error(ExitCode::error, "{}: out of memory", display_name);
  // Only zip, read through its central directory: the view pip's zipfile has.
  libarchive().read_support_format_zip_seekable(a);
  // A name without the UTF-8 flag (bit 11) is CP437, as zipfile decodes it (pip passes no
  // metadata_encoding). Where iconv lacks CP437 such a name with a byte above 0x7f is refused.
  libarchive().read_set_format_option(a, "zip", "hdrcharset", "CP437");
  return a;
}

}  // namespace

Error ZipReader::archive_error(std::string_view what) const {
  const char* reason = libarchive().error_string(m_archive);
  // Some of libarchive's messages end with a newline; an error is one line.
  std::string_view text = reason != nullptr ? reason : "unreadable zip archive";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return make_error(ExitCode::usage, "{}: {}: {}", m_display, what, text);
}

Result<ZipReader> ZipReader::open_file(const fs::path& path, std::string display_name) {
  Utf8Scope utf8;
  VENVFIX_TRY_ASSIGN(struct archive * a, new_zip_archive(display_name));
  ZipReader reader(a, std::move(display_name));
  if (libarchive().read_open_filename(a, path.c_str(), k_read_block) != ARCHIVE_OK) {
    return reader.archive_error("not a readable zip archive");
  }
  // Only the central directory and local headers are read through the mapping.
  if (auto mapped = MappedFile::open(path)) reader.read_index(mapped->bytes());
  return reader;
}

Result<ZipReader> ZipReader::open_memory(std::span<const std::byte> data,
                                         std::string display_name) {
  Utf8Scope utf8;
  VENVFIX_TRY_ASSIGN(struct archive * a, new_zip_archive(display_name));
  ZipReader reader(a, std::move(display_name));
  if (libarchive().read_open_memory(a, data.data(), data.size()) != ARCHIVE_OK) {
    return reader.archive_error("not a readable zip archive");
  }
  reader.read_index(data);
  return reader;
}

ZipReader::ZipReader(ZipReader&& other) noexcept
    : m_archive(std::exchange(other.m_archive, nullptr)),
      m_display(std::move(other.m_display)),
      m_index(std::move(other.m_index)),
      m_position(other.m_position) {}

namespace {

bool has_non_ascii(std::string_view name) {
  return std::any_of(name.begin(), name.end(),
                     [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
}

}  // namespace

void ZipReader::read_index(std::span<const std::byte> data) {
  auto entries = read_zip_index(data);
  if (!entries) return;
  // libarchive's seekable reader returns entries by local header offset, drops a second entry
  // at the same offset and sets aside macOS resource forks: with either, positions would not
  // correspond, so libarchive's names are kept.
  std::stable_sort(entries->begin(), entries->end(),
                   [](const auto& a, const auto& b) { return a.data_offset < b.data_offset; });
  for (std::size_t i = 0; i < entries->size(); ++i) {
    const ZipIndexEntry& entry = (*entries)[i];
    if ((i > 0 && (*entries)[i - 1].data_offset == entry.data_offset) ||
        entry.name.starts_with("__MACOSX/")) {
      m_index.clear();
      return;
    }
    m_index.push_back(IndexName{entry.name, entry.size});
  }
}

// The central directory's name for the entry next() is returning, when the two views agree
// that it is the same entry: the same size, and the same name or two names that are both
// non-ASCII (NFC against NFD, or a charset conversion). At the first disagreement the index is
// dropped for the rest of the archive.
std::optional<std::string> ZipReader::index_name(const ZipEntry& entry) {
  if (m_index.empty()) return std::nullopt;
  const std::size_t at = m_position++;
  if (at < m_index.size()) {
    const IndexName& indexed = m_index[at];
    const bool same_size = entry.size ? *entry.size == indexed.size : indexed.size == 0;
    if (same_size && indexed.name == entry.name) return std::nullopt;
    if (same_size && entry.name_ok && has_non_ascii(entry.name) && has_non_ascii(indexed.name) &&
        is_valid_utf8(indexed.name) && indexed.name.find('\0') == std::string::npos) {
      return indexed.name;
    }
  }
  m_index.clear();
  return std::nullopt;
}

ZipReader::~ZipReader() {
  if (m_archive != nullptr) libarchive().read_free(m_archive);
}

Result<std::optional<ZipEntry>> ZipReader::next() {
  Utf8Scope utf8_scope;
  struct archive_entry* entry = nullptr;
  int rc = libarchive().read_next_header(m_archive, &entry);
  if (rc == ARCHIVE_EOF) return std::optional<ZipEntry>();
  if (entry == nullptr || (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)) {
    return archive_error("corrupt zip archive");
  }
  ZipEntry out;
  const char* utf8 = libarchive().entry_pathname_utf8(entry);
  if (utf8 == nullptr) {
    // libarchive warns when a name is not valid in its charset (UTF-8 flag set but invalid
    // UTF-8): zipfile's decode fails there too, so the wheel is refused, naming the member.
    out.name_ok = false;
    const char* raw = libarchive().entry_pathname(entry);
    out.name = raw != nullptr ? raw : "";
  } else if (rc != ARCHIVE_OK) {
    return archive_error("corrupt zip archive");
  } else {
    out.name = utf8;
  }
  switch (libarchive().entry_filetype(entry)) {
    case AE_IFREG:
      out.type = EntryType::file;
      break;
    case AE_IFDIR:
      out.type = EntryType::directory;
      break;
    case AE_IFLNK:
      out.type = EntryType::symlink;
      break;
    default:
      out.type = EntryType::other;
      break;
  }
  if (libarchive().entry_hardlink(entry) != nullptr) out.type = EntryType::hardlink;
  out.permissions = static_cast<std::uint32_t>(libarchive().entry_perm(entry)) & 07777u;
  out.encrypted = libarchive().entry_is_encrypted(entry) != 0;
  if (libarchive().entry_size_is_set(entry) != 0 && libarchive().entry_size(entry) >= 0) {
    out.size = static_cast<std::uint64_t>(libarchive().entry_size(entry));
  }
  if (auto stored = index_name(out)) out.name = std::move(*stored);
  return std::optional<ZipEntry>(std::move(out));
}

Result<std::uint64_t> ZipReader::read_data(const std::string& member, std::uint64_t limit,
                                           const Sink& sink) {
  Utf8Scope utf8;
  std::uint64_t total = 0;
  for (;;) {
    const void* block = nullptr;
    std::size_t size = 0;
    la_int64_t offset = 0;
    int rc = libarchive().read_data_block(m_archive, &block, &size, &offset);
    if (rc == ARCHIVE_EOF) return total;
    if (rc != ARCHIVE_OK) return archive_error(fmt::format("member {}", member));
    // Zip members are contiguous; a hole would mean a reader we do not expect.
    if (offset < 0 || static_cast<std::uint64_t>(offset) != total) {
      return make_error(ExitCode::usage, "{}: member {} has a non-contiguous data block", m_display,
                        member);
    }
    if (size > limit - total) {
      return make_error(ExitCode::usage,
                        "{}: member {} holds more bytes than its recorded size ({})", m_display,
                        member, limit);
    }
    total += size;
    if (size != 0) {
      VENVFIX_TRY(sink({static_cast<const std::byte*>(block), size}));
    }
  }
}

}  // namespace venvfix::wheel::detail
