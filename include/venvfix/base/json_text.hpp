// JSON text of venvfix's documents. A Linux file name is bytes; JSON text is UTF-8, and
// nlohmann's dump() throws on a string that is not (a file named in Latin-1 inside a venv made a
// rollback fail as "a bug in venvfix"). Documents read by people and programs (reports, errors,
// caches) are written with each byte that is not part of valid UTF-8 shown as U+FFFD; what must
// read back byte for byte (a journal's paths) is encoded first (base/utf8.hpp's is_valid_utf8
// decides, then hex).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace venvfix {

// dump(indent) that never throws on text that is not UTF-8; the ordered kind keeps its keys in
// the order they were added (the plan document's contract order).
std::string json_text(const nlohmann::json& document, int indent = -1);
std::string json_text(const nlohmann::ordered_json& document, int indent = -1);

}  // namespace venvfix
