// The CSV dialect of RECORD files: Python's csv module with its default "excel" dialect, read
// as a file opened with newline='' (PEP 376: "csv module default dialect"). Quoting with ",
// "" inside quotes, commas and line breaks inside quotes, CRLF, LF or CR line ends.
#pragma once

#include <cstddef>
#include <functional>
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

// The same rows, handed one at a time to `on_row(line, fields, unterminated_quote)`; the
// fields' storage is reused between rows (no allocation per row once warm).
void for_each_csv_row(
    std::string_view text,
    const std::function<void(std::size_t line, const std::vector<std::string>& fields,
                             bool unterminated_quote)>& on_row);

// One field as Python's csv.writer writes it in the same dialect (QUOTE_MINIMAL: what pip writes
// RECORD with): quoted when it holds a comma, a quote, CR or LF, each quote doubled.
std::string csv_quote(std::string_view field);

}  // namespace venvfix::dist
