// pyvenv.cfg and Python version strings.
#include <charconv>

#include "venvfix/base/strings.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::env {

std::optional<std::string> PyvenvCfg::get(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return v;
  }
  return std::nullopt;
}

Result<PyvenvCfg> parse_pyvenv_cfg(std::string_view text, std::string_view source_name) {
  if (text.find('\0') != std::string_view::npos) {
    return make_error(ExitCode::usage, "{} is not a text file (it contains NUL bytes)",
                      source_name);
  }
  PyvenvCfg cfg;
  // site.py: `for line in f: if '=' in line: key, _, value = line.partition('='); key =
  // key.strip().lower(); value = value.strip()`. Lines end at \n; a stray \r is whitespace.
  for (std::string_view line : split(text, '\n')) {
    std::size_t equals = line.find('=');
    if (equals == std::string_view::npos) continue;
    std::string key = to_lower_ascii(trim(line.substr(0, equals)));
    std::string value(trim(line.substr(equals + 1)));
    cfg.entries.emplace_back(std::move(key), std::move(value));
  }
  return cfg;
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
