// RECORD files of installed distributions (PEP 376, PEP 627; the binary distribution format's
// "RECORD" section): one CSV row per installed file, "path,algorithm=digest,size".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/base/sha256.hpp"

namespace venvfix::dist {

struct RecordEntry {
  // As written: relative to the site-packages directory that holds the .dist-info, "/"
  // separated, may start with "../../" (scripts, data) or, in old installs, be absolute.
  std::string path;
  std::optional<Sha256Digest> sha256;  // set when the hash is a valid "sha256=..."
  std::string hash_algorithm;          // as written ("sha256", "sha384", ...); empty: no hash
  std::string hash_value;              // the urlsafe-base64 digest text as written
  std::optional<std::uint64_t> size;
  std::size_t line = 0;  // 1-based line of the row in RECORD, for messages
};

// What a lenient read found: the usable entries and one sentence per malformed row.
struct RecordParse {
  std::vector<RecordEntry> entries;
  std::vector<std::string> problems;
};

// Reads every row it can. A malformed row never stops the read; it becomes a problem naming
// `source_name` and the line:
// - wrong number of fields (3 expected): the path is kept, hash and size dropped;
// - bad hash ("md5" without "=", a sha256 digest that is not 43 base64url characters, an
//   algorithm name that is not [a-z0-9_]) or bad size (not a decimal uint64): that part is
//   dropped, the path kept;
// - empty path, a path with NUL bytes, longer than 4096 bytes, or not UTF-8: the row is
//   skipped (no file of that name can exist or be meant);
// - an unterminated quote at the end (Python's reader accepts it): the row is kept and the
//   problem recorded.
// Hash algorithms other than sha256 are legal; their text is kept, `sha256` stays empty.
RecordParse parse_record_lenient(std::string_view text, std::string_view source_name);

// The strict form (for RECORD files venvfix must trust, e.g. inside a wheel): the first
// problem becomes an ExitCode::usage Error naming `source_name` and the line.
Result<std::vector<RecordEntry>> parse_record(std::string_view text, std::string_view source_name);

}  // namespace venvfix::dist
