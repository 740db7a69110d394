// Core metadata (METADATA in a .dist-info, PKG-INFO in an .egg-info, PEP 658 .metadata files):
// RFC 822 style headers as Python's email.parser reads them, up to the first blank line.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"

namespace venvfix::dist {

struct CoreMetadata {
  std::string metadata_version;  // may be empty: old tools omitted it
  std::string name;              // as written (not normalised)
  std::string version;           // as written; PEP 440 parsing is the caller's business
  // Raw PEP 508 strings, in file order, folded lines unfolded; not parsed here.
  std::vector<std::string> requires_dist;
  std::vector<std::string> provides_extra;
  std::optional<std::string> requires_python;
};

// Header rules (email.feedparser, compat32): "Name: value" with case-insensitive names; a
// line starting with space or tab continues the previous header; a blank line ends the
// headers; a line that is neither also ends them (as Python does: the rest is body). Line ends
// may be LF, CRLF or CR. For repeated single-valued fields the first wins.
// Errors (ExitCode::usage, naming `source_name`): no Name or no Version, a Name that is not a
// valid project name, a Version that is empty or not printable ASCII, and non-UTF-8 text in a
// field venvfix keeps. Non-UTF-8 elsewhere (an Author in Latin-1, the body) is ignored.
Result<CoreMetadata> parse_metadata(std::string_view text, std::string_view source_name);

}  // namespace venvfix::dist
