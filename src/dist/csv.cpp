// A transcription of the state machine in CPython's Modules/_csv.c (parse_process_char) for
// the excel dialect: delimiter ',', quotechar '"', doublequote, no escapechar, not strict.
#include "venvfix/dist/csv.hpp"

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

class Parser {
 public:
  std::vector<CsvRow> rows;

  // Processes one physical line (with its terminator, as readline() with newline='' yields
  // it), then the end-of-line pseudo character, as Reader_iternext does.
  void line(std::string_view text, std::size_t line_number) {
    if (m_state == State::start_record) m_row_line = line_number;
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
  void save_field() {
    m_fields.push_back(std::move(m_field));
    m_field.clear();
  }

  void emit() {
    if (!m_fields.empty()) {
      rows.push_back(CsvRow{m_row_line, std::move(m_fields), m_unterminated});
    }
    m_fields.clear();
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

  State m_state = State::start_record;
  std::string m_field;
  std::vector<std::string> m_fields;
  std::size_t m_row_line = 1;
  bool m_unterminated = false;
};

}  // namespace

std::vector<CsvRow> parse_csv(std::string_view text) {
  Parser parser;
  std::size_t line_number = 1;
  std::size_t start = 0;
  while (start < text.size()) {
    // readline() with newline='': a line ends after "\n", "\r\n" or a lone "\r".
    std::size_t end = text.find_first_of("\r\n", start);
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
  return std::move(parser.rows);
}

}  // namespace venvfix::dist
