#include "page_common.hpp"

#include "venvfix/base/strings.hpp"
#include "venvfix/index/url.hpp"

namespace venvfix::index::detail {

Result<std::string> checked_sha256(std::string_view hex, std::string_view filename,
                                   std::string_view page_url) {
  std::string lower = to_lower_ascii(trim(hex));
  bool valid = lower.size() == 64;
  for (char c : lower) valid = valid && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (!valid) {
    return make_error(ExitCode::network,
                      "the index page {} gives {} a sha256 that is not 64 hex digits ('{}')",
                      display_url(page_url), filename, printable_excerpt(hex));
  }
  return lower;
}

Status check_file_name(std::string_view filename, std::string_view page_url) {
  if (filename.empty() || filename == "." || filename == ".." ||
      filename.find_first_of(std::string_view("/\\\0", 3)) != std::string_view::npos) {
    return make_error(ExitCode::network,
                      "the index page {} links a file with no usable name ('{}')",
                      display_url(page_url), printable_excerpt(filename));
  }
  return ok();
}

Result<IndexFile> file_from_link(const LinkAttributes& link, std::string_view page_url) {
  IndexFile file;
  file.url = without_fragment(link.url);
  file.filename = url_file_name(file.url);
  VENVFIX_TRY(check_file_name(file.filename, page_url));
  // The fragment is "<algo>=<hex>"; only sha256 is used (md5/sha1 are ignored, as their
  // absence of strength deserves).
  if (std::optional<std::string> fragment = url_fragment(link.url)) {
    for (std::string_view item : split(*fragment, '&')) {
      std::size_t equals = item.find('=');
      if (equals == std::string_view::npos) continue;
      if (to_lower_ascii(item.substr(0, equals)) != "sha256") continue;
      VENVFIX_TRY_ASSIGN(file.sha256_hex,
                         checked_sha256(item.substr(equals + 1), file.filename, page_url));
    }
  }
  if (link.requires_python && !trim(*link.requires_python).empty()) {
    file.requires_python = std::string(trim(*link.requires_python));
  }
  if (link.yanked) {
    file.yanked = true;
    file.yanked_reason = *link.yanked;
  }
  if (link.core_metadata) {
    std::string value = to_lower_ascii(trim(*link.core_metadata));
    if (value == "true") {
      file.has_core_metadata = true;
    } else if (value != "false" && !value.empty()) {
      std::size_t equals = value.find('=');
      file.has_core_metadata = true;
      if (equals != std::string::npos && value.substr(0, equals) == "sha256") {
        VENVFIX_TRY_ASSIGN(
            file.core_metadata_sha256,
            checked_sha256(value.substr(equals + 1), file.filename + ".metadata", page_url));
      }
    }
  }
  return file;
}

}  // namespace venvfix::index::detail
