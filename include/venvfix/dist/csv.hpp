// The CSV dialect of RECORD files: Python's csv module with its default "excel" dialect, read
// as a file opened with newline='' (PEP 376: "csv module default dialect"). Quoting with ",
// "" inside quotes, commas and line breaks inside quotes, CRLF, LF or CR line ends.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace venvfix::dist {

struct CsvRow {
  std::size_t line = 0;  // 1-based physical line on which the row starts
  std::vector<std::string> fields;
  // The text ended inside a quoted field (Python's non-strict reader accepts this silently).
  bool unterminated_quote = false;
};

// Parses every row exactly as csv.reader(io.StringIO(text, newline='')) does, including its
// lenient cases ('"ab"c' reads as 'abc', a quote inside an unquoted field is literal). Empty
// lines produce no row. Never fails; linear in the input; NUL bytes are ordinary characters.
std::vector<CsvRow> parse_csv(std::string_view text);

}  // namespace venvfix::dist
