// A transcription of the state machine in CPython's Modules/_csv.c (parse_process_char) for
// the excel dialect: delimiter ',', quotechar '"', doublequote, no escapechar, not strict.
#include "venvfix/dist/csv.hpp"

#include <algorithm>

#include "venvfix/base/strings.hpp"

namespace venvfix::dist {

namespace {

enum class State {
  start_record,
  start_field,
  in_field,
  in_quoted_field,
  quote_in_quoted_field,
  eat_crnl,
};

using RowCallback = std::function<void(std::size_t, const std::vector<std::string>&, bool)>;

class Parser {
 public:
  explicit Parser(const RowCallback& on_row) : m_on_row(on_row) {}

  // Processes one physical line (with its terminator, as readline() with newline='' yields
  // it), then the end-of-line pseudo character, as Reader_iternext does.
  void line(std::string_view text, std::size_t line_number) {
    if (m_state == State::start_record) {
      m_row_line = line_number;
      // Nearly every RECORD line has no quote: the state machine would only split it at its
      // commas, one character at a time.
      if (text.find('"') == std::string_view::npos) return unquoted_line(text);
    }
    for (char c : text) process(c, false);
    process('\0', true);
    if (m_state == State::start_record) emit();
  }

  void finish() {
    // End of data: a partial field or an open quote is saved (non-strict mode).
    if (!m_field.empty() || m_state == State::in_quoted_field) {
      m_unterminated = m_state == State::in_quoted_field;
      save_field();
    }
    emit();
  }

 private:
  // A whole record on one line without quotes: its fields are the text between its commas, up
  // to its line break (a line that is only a line break is no record).
  void unquoted_line(std::string_view text) {
    std::string_view content = text;
    while (!content.empty() && (content.back() == '\n' || content.back() == '\r')) {
      content.remove_suffix(1);
    }
    if (content.empty()) return;
    std::size_t begin = 0;
    for (;;) {
      std::size_t comma = content.find(',', begin);
      if (m_count == m_fields.size()) m_fields.emplace_back();
      m_fields[m_count++].assign(content.substr(begin, comma - begin));
      if (comma == std::string_view::npos) break;
      begin = comma + 1;
    }
    emit();
  }

  // Fields live in m_fields[0, m_count): their strings keep their capacity between rows.
  void save_field() {
    if (m_count == m_fields.size()) m_fields.emplace_back();
    m_fields[m_count].swap(m_field);
    m_field.clear();
    ++m_count;
  }

  void emit() {
    if (m_count > 0) {
      std::size_t capacity = m_fields.size();
      m_fields.resize(m_count);
      m_on_row(m_row_line, m_fields, m_unterminated);
      m_fields.resize(std::max(capacity, m_count));
    }
    m_count = 0;
    m_unterminated = false;
  }

  void process(char c, bool eol) {
    const bool newline = !eol && (c == '\n' || c == '\r');
    switch (m_state) {
      case State::start_record:
        if (eol) return;  // empty line
        if (newline) {
          m_state = State::eat_crnl;
          return;
        }
        m_state = State::start_field;
        [[fallthrough]];
      case State::start_field:
        if (newline || eol) {
          save_field();
          m_state = eol ? State::start_record : State::eat_crnl;
        } else if (c == '"') {
          m_state = State::in_quoted_field;
        } else if (c == ',') {
          save_field();
        } else {
          m_field.push_back(c);
          m_state = State::in_field;
        }
        return;
      case State::in_field:
        if (newline || eol) {
          save_field();
          m_state = eol ? State::start_record : State::eat_crnl;
        } else if (c == ',') {
          save_field();
          m_state = State::start_field;
        } else {
          m_field.push_back(c);
        }
        return;
      case State::in_quoted_field:
        if (eol) return;  // the line break itself was already added as a character
        if (c == '"') {
          m_state = State::quote_in_quoted_field;
        } else {
          m_field.push_back(c);
        }
        return;
      case State::quote_in_quoted_field:
        if (!eol && c == '"') {
          m_field.push_back('"');
          m_state = State::in_quoted_field;
        } else if (!eol && c == ',') {
          save_field();
          m_state = State::start_field;
        } else if (newline || eol) {
          save_field();
          m_state = eol ? State::start_record : State::eat_crnl;
        } else {
          m_field.push_back(c);
          m_state = State::in_field;
        }
        return;
      case State::eat_crnl:
        if (eol) m_state = State::start_record;
        // Python raises "new-line character seen in unquoted field" for any other character;
        // readline() never yields one after a line break, so this cannot happen here.
        return;
    }
  }

  const RowCallback& m_on_row;
  std::size_t m_count = 0;
  State m_state = State::start_record;
  std::string m_field;
  std::vector<std::string> m_fields;
  std::size_t m_row_line = 1;
  bool m_unterminated = false;
};

}  // namespace

std::vector<CsvRow> parse_csv(std::string_view text) {
  std::vector<CsvRow> rows;
  for_each_csv_row(
      text, [&rows](std::size_t line, const std::vector<std::string>& fields, bool unterminated) {
        rows.push_back(CsvRow{line, fields, unterminated});
      });
  return rows;
}

void for_each_csv_row(std::string_view text, const RowCallback& on_row) {
  Parser parser(on_row);
  std::size_t line_number = 1;
  std::size_t start = 0;
  // Each kind of line break is searched with memchr: "\n" once per line, "\r" (rare in a
  // RECORD) again only once the previous one is passed, so the text is read once for each.
  // A torch-sized venv's RECORDs hold 2.4 MB; a loop over bytes took 9 ms of a doctor's CPU.
  std::size_t next_cr = text.find('\r');
  while (start < text.size()) {
    // readline() with newline='': a line ends after "\n", "\r\n" or a lone "\r".
    if (next_cr < start) next_cr = text.find('\r', start);
    std::size_t end = std::min(text.find('\n', start), next_cr);  // npos is the largest
    if (end == std::string_view::npos) {
      end = text.size();
    } else if (text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n') {
      end += 2;
    } else {
      end += 1;
    }
    parser.line(text.substr(start, end - start), line_number);
    ++line_number;
    start = end;
  }
  parser.finish();
}

std::string csv_quote(std::string_view field) {
  if (find_first_of_few(field, ",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace venvfix::dist
