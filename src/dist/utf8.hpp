// UTF-8 validation for the text formats of installed distributions (RECORD, METADATA).
#pragma once

#include <string_view>

namespace venvfix::dist {

// True when `text` is well-formed UTF-8 (no overlong forms, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view text);

}  // namespace venvfix::dist
