// pyvenv.cfg and Python version strings.
#include <array>
#include <charconv>
#include <vector>

#include "venvfix/base/strings.hpp"
#include "venvfix/base/utf8.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::env {

std::optional<std::string> PyvenvCfg::get(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return v;
  }
  return std::nullopt;
}

std::optional<std::string> PyvenvCfg::last(std::string_view key) const {
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (it->first == key) return it->second;
  }
  return std::nullopt;
}

namespace {

// What Python's str.strip() removes besides ASCII: the non-ASCII characters for which
// str.isspace() is true (the same set in Python 3.8 to 3.13), in UTF-8.
constexpr std::array<std::string_view, 19> k_unicode_spaces = {
    "\u0085", "\u00a0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003",
    "\u2004", "\u2005", "\u2006", "\u2007", "\u2008", "\u2009", "\u200a",
    "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"};

bool is_python_ascii_space(char c) {
  // str.isspace() of ASCII: tab to carriage return, the four separators 0x1c-0x1f, space.
  return (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f') || c == ' ';
}

// The length of the Python whitespace character `text` starts (or ends) with; 0 when none.
std::size_t leading_space(std::string_view text) {
  if (!text.empty() && is_python_ascii_space(text.front())) return 1;
  for (std::string_view space : k_unicode_spaces) {
    if (text.starts_with(space)) return space.size();
  }
  return 0;
}

std::size_t trailing_space(std::string_view text) {
  if (!text.empty() && is_python_ascii_space(text.back())) return 1;
  for (std::string_view space : k_unicode_spaces) {
    if (text.ends_with(space)) return space.size();
  }
  return 0;
}

// Python's str.strip() on UTF-8 text.
std::string_view python_strip(std::string_view text) {
  while (std::size_t n = leading_space(text)) text.remove_prefix(n);
  while (std::size_t n = trailing_space(text)) text.remove_suffix(n);
  return text;
}

// Python's str.lower() as far as it can make an ASCII key: ASCII letters, and the Kelvin sign.
std::string python_lower_key(std::string_view text) {
  return replace_all(to_lower_ascii(text), "\u212a", "k");
}

}  // namespace

Result<PyvenvCfg> parse_pyvenv_cfg(std::string_view text, std::string_view source_name) {
  if (!is_valid_utf8(text)) {
    return make_error(ExitCode::usage,
                      "{} is not UTF-8 text: the venv's interpreter cannot read it either "
                      "(site.py raises UnicodeDecodeError)",
                      source_name);
  }
  PyvenvCfg cfg;
  cfg.text = std::string(text);
  // site.py: `for line in f: if '=' in line: key, _, value = line.partition('='); key =
  // key.strip().lower(); value = value.strip()`.
  for (std::string_view line : split_lines(text)) {
    std::size_t equals = line.find('=');
    if (equals == std::string_view::npos) continue;
    cfg.entries.emplace_back(python_lower_key(python_strip(line.substr(0, equals))),
                             std::string(python_strip(line.substr(equals + 1))));
  }
  return cfg;
}

namespace {

// C's wcstok on one line: skips `delimiters`, returns the token up to the next one and moves
// `rest` past that delimiter; nullopt when nothing but delimiters is left.
std::optional<std::string_view> c_token(std::string_view& rest, std::string_view delimiters) {
  const std::size_t start = rest.find_first_not_of(delimiters);
  if (start == std::string_view::npos) {
    rest = {};
    return std::nullopt;
  }
  rest.remove_prefix(start);
  const std::size_t end = rest.find_first_of(delimiters);
  const std::string_view token = rest.substr(0, end);
  rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
  return token;
}

// getpath.c reads lines with fgets(buffer, MAXPATHLEN * 2, file): at most 8191 bytes, "\n"
// included.
constexpr std::size_t k_getpath_c_line_bytes = 2 * 4096 - 1;

std::optional<std::string> home_of_getpath_c(std::string_view text) {
  const std::vector<std::string_view> lines = split(text, '\n');
  // The last piece has no "\n" after it: fgets cannot end it, and the scan stops before it; so
  // does a line too long for fgets's buffer or one holding a NUL (strlen ends it early).
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line.size() + 1 > k_getpath_c_line_bytes || line.find('\0') != std::string_view::npos) {
      break;
    }
    if (line.starts_with('#')) continue;
    // UTF-8 never puts an ASCII byte inside a character: tokens of bytes are tokens of wchar_t.
    auto key = c_token(line, " \t\r");
    if (!key || *key != "home") continue;
    auto equals = c_token(line, " \t");
    if (!equals || *equals != "=") continue;
    if (auto value = c_token(line, "\r")) return std::string(*value);
  }
  return std::nullopt;
}

std::optional<std::string> home_of_getpath_py(std::string_view text) {
  // readlines() splits with wcschr, which stops at the first NUL.
  for (std::string_view line : split(text.substr(0, text.find('\0')), '\n')) {
    const std::size_t equals = line.find('=');
    if (equals == std::string_view::npos) continue;
    if (python_lower_key(python_strip(line.substr(0, equals))) == "home") {
      return std::string(python_strip(line.substr(equals + 1)));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> getpath_home(std::string_view text, HomeReader reader) {
  return reader == HomeReader::getpath_c ? home_of_getpath_c(text) : home_of_getpath_py(text);
}

namespace {
// Reads a run of ASCII digits as a small non-negative int; advances `text`.
std::optional<int> take_number(std::string_view& text) {
  std::size_t n = 0;
  while (n < text.size() && n < 6 && text[n] >= '0' && text[n] <= '9') ++n;
  if (n == 0) return std::nullopt;
  int value = 0;
  std::from_chars(text.data(), text.data() + n, value);
  text.remove_prefix(n);
  return value;
}
}  // namespace

std::optional<PythonVersion> parse_python_version(std::string_view text) {
  text = trim(text);
  PythonVersion version;
  version.full = std::string(text);
  std::string_view rest = text;
  auto major = take_number(rest);
  if (!major || rest.empty() || rest.front() != '.') return std::nullopt;
  rest.remove_prefix(1);
  auto minor = take_number(rest);
  if (!minor) return std::nullopt;
  version.major = *major;
  version.minor = *minor;
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    auto micro = take_number(rest);
    if (!micro) return std::nullopt;
    version.micro = *micro;
  }
  // Whatever follows ("rc1", ".final.0", "+") is kept in `full` only; reject obvious garbage.
  for (char c : rest) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return std::nullopt;
  }
  if (version.major < 2 || version.major > 9) return std::nullopt;
  return version;
}

}  // namespace venvfix::env
