// libarchive's functions, found in libarchive.so.13 when the first wheel is opened (dlopen)
// rather than linked, so that a venvfix that never unpacks does not load libarchive at all (see
// venvfix/base/shared_library.hpp). Every call in zip_reader.cpp goes through libarchive().
// Private to the wheel module.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include "venvfix/base/result.hpp"

namespace venvfix::wheel::detail {

// libarchive's soname since 3.0 (2011). A test checks it against the library the build
// compiled against.
inline constexpr const char* archive_soname = "libarchive.so.13";

// Each member has the type of the header's declaration of the function it is named after
// (read_new is archive_read_new).
struct ArchiveLibrary {
  decltype(&::archive_read_new) read_new = nullptr;
  decltype(&::archive_read_support_format_zip_seekable) read_support_format_zip_seekable = nullptr;
  decltype(&::archive_read_set_format_option) read_set_format_option = nullptr;
  decltype(&::archive_read_open_filename) read_open_filename = nullptr;
  decltype(&::archive_read_open_memory) read_open_memory = nullptr;
  decltype(&::archive_read_next_header) read_next_header = nullptr;
  decltype(&::archive_read_data_block) read_data_block = nullptr;
  decltype(&::archive_read_free) read_free = nullptr;
  decltype(&::archive_error_string) error_string = nullptr;
  decltype(&::archive_entry_pathname) entry_pathname = nullptr;
  decltype(&::archive_entry_pathname_utf8) entry_pathname_utf8 = nullptr;
  decltype(&::archive_entry_filetype) entry_filetype = nullptr;
  decltype(&::archive_entry_hardlink) entry_hardlink = nullptr;
  decltype(&::archive_entry_perm) entry_perm = nullptr;
  decltype(&::archive_entry_is_encrypted) entry_is_encrypted = nullptr;
  decltype(&::archive_entry_size_is_set) entry_size_is_set = nullptr;
  decltype(&::archive_entry_size) entry_size = nullptr;
};

// Loads libarchive once per process (thread-safe); later calls return the first call's
// outcome. The error names libarchive.so.13 and the loader's reason.
Result<const ArchiveLibrary*> load_libarchive();

// The loaded library. Only for code that runs after load_libarchive() succeeded (it holds an
// archive handle).
const ArchiveLibrary& libarchive();

}  // namespace venvfix::wheel::detail
