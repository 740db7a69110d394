#include "wheel/archive_library.hpp"

#include "venvfix/base/shared_library.hpp"

namespace venvfix::wheel::detail {

namespace {

Result<ArchiveLibrary> find_functions(const SharedLibrary& library) {
  ArchiveLibrary api;
  VENVFIX_TRY(library.find("archive_read_new", api.read_new));
  VENVFIX_TRY(library.find("archive_read_support_format_zip_seekable",
                           api.read_support_format_zip_seekable));
  VENVFIX_TRY(library.find("archive_read_set_format_option", api.read_set_format_option));
  VENVFIX_TRY(library.find("archive_read_open_filename", api.read_open_filename));
  VENVFIX_TRY(library.find("archive_read_open_memory", api.read_open_memory));
  VENVFIX_TRY(library.find("archive_read_next_header", api.read_next_header));
  VENVFIX_TRY(library.find("archive_read_data_block", api.read_data_block));
  VENVFIX_TRY(library.find("archive_read_free", api.read_free));
  VENVFIX_TRY(library.find("archive_error_string", api.error_string));
  VENVFIX_TRY(library.find("archive_entry_pathname", api.entry_pathname));
  VENVFIX_TRY(library.find("archive_entry_pathname_utf8", api.entry_pathname_utf8));
  VENVFIX_TRY(library.find("archive_entry_filetype", api.entry_filetype));
  VENVFIX_TRY(library.find("archive_entry_hardlink", api.entry_hardlink));
  VENVFIX_TRY(library.find("archive_entry_perm", api.entry_perm));
  VENVFIX_TRY(library.find("archive_entry_is_encrypted", api.entry_is_encrypted));
  VENVFIX_TRY(library.find("archive_entry_size_is_set", api.entry_size_is_set));
  VENVFIX_TRY(library.find("archive_entry_size", api.entry_size));
  return api;
}

Result<ArchiveLibrary> open_archive() {
  VENVFIX_TRY_ASSIGN(SharedLibrary library, SharedLibrary::open(archive_soname, "to read wheels"));
  return find_functions(library);
}

}  // namespace

Result<const ArchiveLibrary*> load_libarchive() {
  return load_once<ArchiveLibrary, open_archive>();
}

const ArchiveLibrary& libarchive() {
  return loaded_functions<ArchiveLibrary, open_archive>();
}

}  // namespace venvfix::wheel::detail
