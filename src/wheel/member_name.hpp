// The rules an archive member's name must follow before venvfix maps it to a path.
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

}  // namespace venvfix::wheel::detail
