// Shared by the HTML and JSON page parsers: turning what a link says into an IndexFile with
// the checks both formats need.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "venvfix/base/result.hpp"
#include "venvfix/index/project_page.hpp"

namespace venvfix::index::detail {

// The attributes of one HTML link, as text (nullopt: attribute absent).
struct LinkAttributes {
  std::string url;  // absolute, may have a "#sha256=…" fragment
  std::optional<std::string> requires_python;
  std::optional<std::string> yanked;         // present (possibly empty) = yanked
  std::optional<std::string> core_metadata;  // "true", "false" or "<algo>=<hex>"
};

Result<IndexFile> file_from_link(const LinkAttributes& link, std::string_view page_url);

// Lowercase hex of a sha256 digest, or an error naming the page and the file.
Result<std::string> checked_sha256(std::string_view hex, std::string_view filename,
                                   std::string_view page_url);

// Rejects file names that could not be a file name ("", "/", "..", NUL).
Status check_file_name(std::string_view filename, std::string_view page_url);

}  // namespace venvfix::index::detail
