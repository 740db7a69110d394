// UTF-8 validation: for the text formats of installed distributions (RECORD, METADATA), member
// names in a wheel, and the file names a JSON document can hold as strings (base/json_text.hpp).
#pragma once

#include <string_view>

namespace venvfix {

// True when `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF), as Python's strict decoder and nlohmann's dump() demand.
bool is_valid_utf8(std::string_view text);

}  // namespace venvfix
