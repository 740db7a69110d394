// Character classes shared by the PEP parsers. Private to src/pep.
#pragma once

#include <string_view>

namespace venvfix::pep::text {

// The ASCII characters Python's `str.isspace()` (and so `\s` in packaging's regexes) accepts:
// space, \t \n \v \f \r and the separators \x1c-\x1f.
inline bool is_python_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

inline std::string_view trim_python_space(std::string_view s) {
  while (!s.empty() && is_python_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_python_space(s.back())) s.remove_suffix(1);
  return s;
}

inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
inline bool is_alnum(char c) {
  return is_digit(c) || is_alpha(c);
}
inline char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// Case-insensitive: does `s` start with the lowercase word `word` at `pos`?
inline bool starts_with_word(std::string_view s, std::size_t pos, std::string_view word) {
  if (s.size() - pos < word.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (lower(s[pos + i]) != word[i]) return false;
  }
  return true;
}

}  // namespace venvfix::pep::text
