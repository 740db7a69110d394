// The rules an archive member's name must follow before venvfix maps it to a path, and how a
// name stored without the UTF-8 flag is read.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace venvfix::wheel::detail {

// nullopt when `name` (a file member's name, or a directory's without its trailing '/') is
// safe: non-empty, at most 4096 bytes, relative, '/'-separated components that are neither
// empty, "." nor "..", and no backslash, NUL or other control character. Otherwise the reason,
// as a phrase ("is an absolute path").
std::optional<std::string> unsafe_name_reason(std::string_view name);

// A zip member name stored without the UTF-8 flag (general purpose bit 11), decoded as
// zipfile, and so pip, decodes it: code page 437 (ASCII below 0x80). Returns UTF-8.
std::string cp437_to_utf8(std::string_view bytes);

}  // namespace venvfix::wheel::detail
