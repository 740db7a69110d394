#include "venvfix/pep/requirement.hpp"

#include <algorithm>

#include "pep/text.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/pep/name.hpp"

namespace venvfix::pep {

namespace {

class RequirementParser {
 public:
  explicit RequirementParser(std::string_view input) : m_input(input) {}

  Result<Requirement> run() {
    Requirement req;
    skip_space();
    VENVFIX_TRY_ASSIGN(req.name, identifier("a project name"));
    skip_space();
    if (peek('[')) {
      ++m_pos;
      VENVFIX_TRY(parse_extras(req));
      skip_space();
    }
    if (peek('@')) {
      ++m_pos;
      skip_space();
      std::size_t start = m_pos;
      while (m_pos < m_input.size() && !text::is_python_space(m_input[m_pos])) ++m_pos;
      req.url = std::string(m_input.substr(start, m_pos - start));
      if (req.url.empty()) return fail("expected a URL after '@'");
      if (auto why = check_url(req.url); !why.empty()) {
        m_pos = start;
        return fail(why);
      }
      skip_space();
      if (m_pos == m_input.size()) return req;
      if (!peek(';')) return fail("expected ';' and a marker after the URL");
    } else {
      VENVFIX_TRY(parse_specifier(req));
    }
    if (peek(';')) {
      ++m_pos;
      auto marker = Marker::parse(m_input.substr(m_pos));
      if (!marker) {
        return make_error(ExitCode::usage, "invalid requirement \"{}\": {}",
                          printable_excerpt(m_input), marker.error().message);
      }
      req.marker = std::move(*marker);
      return req;
    }
    skip_space();
    if (m_pos != m_input.size()) return fail("expected a version specifier, '@', ';' or the end");
    return req;
  }

 private:
  bool peek(char c) const { return m_pos < m_input.size() && m_input[m_pos] == c; }

  void skip_space() {
    while (m_pos < m_input.size() && text::is_python_space(m_input[m_pos])) ++m_pos;
  }

  Error fail(std::string_view what) const {
    std::string found = m_pos < m_input.size()
                            ? fmt::format("'{}'", printable_excerpt(m_input.substr(m_pos, 8)))
                            : std::string("the end");
    return make_error(ExitCode::usage, "invalid requirement \"{}\": {} at position {}, found {}",
                      printable_excerpt(m_input), what, m_pos, found);
  }

  // PEP 508 identifier: letters and digits, with '-', '_' and '.' inside.
  Result<std::string> identifier(std::string_view what) {
    std::size_t start = m_pos;
    while (m_pos < m_input.size() && (text::is_alnum(m_input[m_pos]) || m_input[m_pos] == '-' ||
                                      m_input[m_pos] == '_' || m_input[m_pos] == '.')) {
      ++m_pos;
    }
    std::string_view word = m_input.substr(start, m_pos - start);
    if (word.empty() || !is_valid_name(word)) {
      if (!word.empty() && text::is_alnum(word.front())) {
        // Point at the trailing punctuation.
        while (m_pos > start && !text::is_alnum(m_input[m_pos - 1])) --m_pos;
      } else {
        m_pos = start;
      }
      return fail(fmt::format("expected {} (letters and digits, with -_. inside)", what));
    }
    return std::string(word);
  }

  Status parse_extras(Requirement& req) {
    skip_space();
    if (peek(']')) {
      ++m_pos;
      return ok();
    }
    for (;;) {
      skip_space();
      VENVFIX_TRY_ASSIGN(std::string extra, identifier("an extra name"));
      req.extras.push_back(normalize_name(extra));
      skip_space();
      if (peek(',')) {
        ++m_pos;
        continue;
      }
      if (peek(']')) {
        ++m_pos;
        break;
      }
      return fail("expected ',' or ']' in the extras");
    }
    std::sort(req.extras.begin(), req.extras.end());
    req.extras.erase(std::unique(req.extras.begin(), req.extras.end()), req.extras.end());
    return ok();
  }

  // `(spec, spec)` or `spec, spec` up to ';' or the end. Unlike a bare SpecifierSet, empty
  // clauses are not allowed here (PEP 508's grammar).
  Status parse_specifier(Requirement& req) {
    std::size_t start = m_pos;
    std::size_t end = 0;
    const bool parens = peek('(');
    if (parens) {
      std::size_t close = m_input.find(')', m_pos);
      if (close == std::string_view::npos) return fail("unclosed '('");
      start = m_pos + 1;
      end = close;
      m_pos = close + 1;
      skip_space();
    } else {
      end = std::min(m_input.find(';', m_pos), m_input.size());
      m_pos = end;
    }
    std::string_view clauses = m_input.substr(start, end - start);
    if (text::trim_python_space(clauses).empty()) {
      if (parens) {
        m_pos = start;
        return fail("expected a version specifier inside '()'");
      }
      return ok();
    }
    for (std::string_view clause : split(clauses, ',')) {
      if (text::trim_python_space(clause).empty()) {
        m_pos = start;
        return fail("empty clause in the version specifier");
      }
    }
    auto set = SpecifierSet::parse(clauses);
    if (!set) {
      return make_error(ExitCode::usage, "invalid requirement \"{}\": {}",
                        printable_excerpt(m_input), set.error().message);
    }
    req.specifier = std::move(*set);
    return ok();
  }

  // Returns why `url` is not a usable URL, or "".
  static std::string check_url(std::string_view url) {
    std::size_t colon = url.find(':');
    bool scheme_ok = colon != std::string_view::npos && colon > 0 && text::is_alpha(url[0]);
    for (std::size_t i = 0; scheme_ok && i < colon; ++i) {
      char c = url[i];
      scheme_ok = text::is_alnum(c) || c == '+' || c == '-' || c == '.';
    }
    if (!scheme_ok) return "the URL has no scheme (like https: or file:)";
    std::string scheme = to_lower_ascii(url.substr(0, colon));
    if (scheme == "file") return "";
    std::string_view rest = url.substr(colon + 1);
    if (rest.substr(0, 2) != "//" || rest.size() == 2 || rest[2] == '/') {
      return "the URL has no host";
    }
    return "";
  }

  std::string_view m_input;
  std::size_t m_pos = 0;
};

}  // namespace

Result<Requirement> Requirement::parse(std::string_view text) {
  return RequirementParser(text).run();
}

std::string Requirement::to_string() const {
  std::string out = name;
  if (!extras.empty()) out += "[" + join(extras, ",") + "]";
  out += specifier.to_string();
  if (!url.empty()) {
    out += " @ " + url;
    if (marker) out += " ";
  }
  if (marker) out += "; " + marker->to_string();
  return out;
}

}  // namespace venvfix::pep
