#include "venvfix/pep/name.hpp"

namespace venvfix::pep {

namespace {
bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool is_separator(char c) {
  return c == '-' || c == '_' || c == '.';
}
}  // namespace

std::string normalize_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  bool in_separator_run = false;
  for (char c : name) {
    if (is_separator(c)) {
      if (!in_separator_run) out.push_back('-');
      in_separator_run = true;
      continue;
    }
    in_separator_run = false;
    out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  return out;
}

bool is_valid_name(std::string_view name) {
  if (name.empty() || !is_alnum(name.front()) || !is_alnum(name.back())) return false;
  for (char c : name) {
    if (!is_alnum(c) && !is_separator(c)) return false;
  }
  return true;
}

}  // namespace venvfix::pep
