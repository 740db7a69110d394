// libFuzzer target: the readers of an installed distribution's own files, which any package
// (or a hand edit) writes and every `doctor` reads: RECORD through the CSV reader, and METADATA.
// For RECORD: the two CSV readers agree row for row; every entry the lenient read keeps has a
// path a file can have (non-empty, no NUL, at most 4096 bytes, UTF-8) and a consistent hash;
// the strict read succeeds exactly when the lenient one found no problem, with the same entries;
// and the entries, written back as pip writes RECORD, read back as the same entries. For
// METADATA: what parses has a name and a printable ASCII version.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/base/utf8.hpp"
#include "venvfix/dist/csv.hpp"
#include "venvfix/dist/metadata.hpp"
#include "venvfix/dist/record.hpp"

namespace {

using venvfix::dist::RecordEntry;

std::string hash_field(const RecordEntry& entry) {
  if (entry.hash_algorithm.empty()) return {};
  if (entry.sha256) return "sha256=" + venvfix::to_base64url_nopad(*entry.sha256);
  return entry.hash_algorithm + "=" + entry.hash_value;
}

std::string written_back(const std::vector<RecordEntry>& entries) {
  std::string out;
  for (const RecordEntry& entry : entries) {
    out += venvfix::dist::csv_quote(entry.path) + "," +
           venvfix::dist::csv_quote(hash_field(entry)) + "," +
           (entry.size ? std::to_string(*entry.size) : "") + "\r\n";
  }
  return out;
}

bool same_entries(const std::vector<RecordEntry>& a, const std::vector<RecordEntry>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].path != b[i].path || a[i].sha256 != b[i].sha256 ||
        a[i].hash_algorithm != b[i].hash_algorithm || a[i].hash_value != b[i].hash_value ||
        a[i].size != b[i].size) {
      return false;
    }
  }
  return true;
}

void check_csv(std::string_view text) {
  const std::vector<venvfix::dist::CsvRow> rows = venvfix::dist::parse_csv(text);
  std::size_t seen = 0;
  venvfix::dist::for_each_csv_row(
      text, [&](std::size_t line, const std::vector<std::string>& fields, bool unterminated) {
        VENVFIX_FUZZ_CHECK(seen < rows.size());
        VENVFIX_FUZZ_CHECK(rows[seen].line == line && rows[seen].fields == fields &&
                           rows[seen].unterminated_quote == unterminated);
        ++seen;
      });
  VENVFIX_FUZZ_CHECK(seen == rows.size());
}

void check_record(std::string_view text) {
  const venvfix::dist::RecordParse lenient = venvfix::dist::parse_record_lenient(text, "RECORD");
  for (const RecordEntry& entry : lenient.entries) {
    VENVFIX_FUZZ_CHECK(!entry.path.empty() && entry.path.size() <= 4096);
    VENVFIX_FUZZ_CHECK(entry.path.find('\0') == std::string::npos);
    VENVFIX_FUZZ_CHECK(venvfix::is_valid_utf8(entry.path));
    VENVFIX_FUZZ_CHECK(!entry.sha256 ||
                       (entry.hash_algorithm == "sha256" && entry.hash_value.empty()));
    VENVFIX_FUZZ_CHECK(entry.line >= 1);
  }
  for (const std::string& problem : lenient.problems) {
    VENVFIX_FUZZ_CHECK(problem.find("RECORD") != std::string::npos);
  }
  auto strict = venvfix::dist::parse_record(text, "RECORD");
  VENVFIX_FUZZ_CHECK(strict.has_value() == lenient.problems.empty());
  if (strict) VENVFIX_FUZZ_CHECK(same_entries(*strict, lenient.entries));
  const venvfix::dist::RecordParse again =
      venvfix::dist::parse_record_lenient(written_back(lenient.entries), "written RECORD");
  VENVFIX_FUZZ_CHECK(again.problems.empty());
  VENVFIX_FUZZ_CHECK(same_entries(again.entries, lenient.entries));
}

void check_metadata(std::string_view text) {
  auto metadata = venvfix::dist::parse_metadata(text, "METADATA");
  if (!metadata) return;
  VENVFIX_FUZZ_CHECK(!metadata->name.empty() && !metadata->version.empty());
  for (char c : metadata->version) VENVFIX_FUZZ_CHECK(c >= ' ' && c < 0x7f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = venvfix::fuzz::as_text(data, size);
  check_csv(text);
  check_record(text);
  check_metadata(text);
  return 0;
}
