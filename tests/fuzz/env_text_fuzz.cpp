// libFuzzer target: the small text files of an environment and its wheels that venvfix reads:
// pyvenv.cfg (any tool or hand may write it), the Python version in it, and entry_points.txt
// (from a wheel). pyvenv.cfg: it parses exactly when it is UTF-8, with one entry per line that
// has an '=' (lines end at "\n", "\r\n" or "\r"); no key or value keeps a line break or edge
// whitespace, no key an ASCII capital; written back as "key = value" lines it reads the same.
// (What those rules must be is decided by the real interpreters:
// tests/env/pyvenv_cfg_python_test.cpp.) A Python version that parses has a plausible major and
// reads the same from its numbers. Entry points that parse have script names of the allowed
// characters and a `module:attr` callable, and written back read the same; a launcher's shebang
// line fits the kernel's 127 bytes or is the /bin/sh trampoline.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "venvfix/base/utf8.hpp"
#include "venvfix/env/venv.hpp"
#include "wheel/entry_points.hpp"

namespace {

using venvfix::wheel::EntryPoint;

bool has_edge_space(std::string_view text) {
  auto space = [](char c) { return (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x20); };
  return !text.empty() && (space(text.front()) || space(text.back()));
}

std::size_t lines_with_equals(std::string_view text) {
  std::size_t count = 0;
  while (!text.empty()) {
    std::size_t end = std::min(text.find_first_of("\r\n"), text.size());
    if (text.substr(0, end).find('=') != std::string_view::npos) ++count;
    std::size_t next = end + 1;
    if (end + 1 < text.size() && text[end] == '\r' && text[end + 1] == '\n') ++next;
    text.remove_prefix(std::min(next, text.size()));
  }
  return count;
}

// getpath's `home` is one line's part: no line end or NUL in it; the C reading keeps no CR, and
// the getpath.py reading is the first entry named home when the text has no NUL and no lone CR.
void check_getpath_home(std::string_view text) {
  using venvfix::env::HomeReader;
  const auto c_home = venvfix::env::getpath_home(text, HomeReader::getpath_c);
  const auto py_home = venvfix::env::getpath_home(text, HomeReader::getpath_py);
  if (c_home)
    VENVFIX_FUZZ_CHECK(c_home->find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos);
  if (py_home)
    VENVFIX_FUZZ_CHECK(py_home->find_first_of(std::string_view("\n\0", 2)) == std::string::npos);
  if (text.find('\0') != std::string_view::npos || text.find('\r') != std::string_view::npos)
    return;
  auto cfg = venvfix::env::parse_pyvenv_cfg(text, "pyvenv.cfg");
  if (cfg) VENVFIX_FUZZ_CHECK(py_home == cfg->get("home"));
}

void check_pyvenv_cfg(std::string_view text) {
  auto cfg = venvfix::env::parse_pyvenv_cfg(text, "pyvenv.cfg");
  VENVFIX_FUZZ_CHECK(cfg.has_value() == venvfix::is_valid_utf8(text));
  if (!cfg) return;
  VENVFIX_FUZZ_CHECK(cfg->entries.size() == lines_with_equals(text));
  std::string written;
  for (const auto& [key, value] : cfg->entries) {
    VENVFIX_FUZZ_CHECK(key.find_first_of("=\r\n") == std::string::npos);
    VENVFIX_FUZZ_CHECK(value.find_first_of("\r\n") == std::string::npos);
    VENVFIX_FUZZ_CHECK(!has_edge_space(key) && !has_edge_space(value));
    VENVFIX_FUZZ_CHECK(
        std::none_of(key.begin(), key.end(), [](char c) { return c >= 'A' && c <= 'Z'; }));
    VENVFIX_FUZZ_CHECK(cfg->get(key).has_value() && cfg->last(key).has_value());
    written.append(key).append(" = ").append(value).append("\n");
  }
  auto again = venvfix::env::parse_pyvenv_cfg(written, "pyvenv.cfg");
  VENVFIX_FUZZ_CHECK(again && again->entries == cfg->entries);
  check_getpath_home(text);
}

void check_python_version(std::string_view text) {
  auto version = venvfix::env::parse_python_version(text);
  if (!version) return;
  VENVFIX_FUZZ_CHECK(version->major >= 2 && version->major <= 9);
  VENVFIX_FUZZ_CHECK(version->minor >= 0 && version->micro >= 0);
  auto again = venvfix::env::parse_python_version(std::to_string(version->major) + "." +
                                                  std::to_string(version->minor) + "." +
                                                  std::to_string(version->micro));
  VENVFIX_FUZZ_CHECK(again && again->major == version->major && again->minor == version->minor &&
                     again->micro == version->micro);
}

bool is_script_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' ||
                  c == '-' || c == '+';
         });
}

bool same(const std::vector<EntryPoint>& a, const std::vector<EntryPoint>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const EntryPoint& x, const EntryPoint& y) {
                      return x.name == y.name && x.module == y.module && x.attr == y.attr;
                    });
}

void check_entry_points(std::string_view text, std::string_view executable) {
  auto groups = venvfix::wheel::detail::parse_entry_points(text, "entry_points.txt");
  if (!groups) return;
  std::string written;
  for (const auto& [section, entries] : {std::pair{"console_scripts", &groups->console_scripts},
                                         std::pair{"gui_scripts", &groups->gui_scripts}}) {
    written += std::string("[") + section + "]\n";
    for (const EntryPoint& entry : *entries) {
      VENVFIX_FUZZ_CHECK(is_script_name(entry.name));
      VENVFIX_FUZZ_CHECK(!entry.module.empty() && !entry.attr.empty());
      VENVFIX_FUZZ_CHECK(std::count_if(entries->begin(), entries->end(), [&](const EntryPoint& e) {
                           return e.name == entry.name;
                         }) == 1);
      written += entry.name + " = " + entry.module + ":" + entry.attr + "\n";
      const std::string script = venvfix::wheel::detail::launcher_script(executable, entry);
      const std::size_t first_line = script.find('\n');
      VENVFIX_FUZZ_CHECK(script.starts_with("#!") && first_line != std::string::npos);
      VENVFIX_FUZZ_CHECK(first_line + 1 <= 127 || script.starts_with("#!/bin/sh\n"));
    }
  }
  auto again = venvfix::wheel::detail::parse_entry_points(written, "entry_points.txt");
  VENVFIX_FUZZ_CHECK(again && same(again->console_scripts, groups->console_scripts) &&
                     same(again->gui_scripts, groups->gui_scripts));
  for (const EntryPoint& entry :
       venvfix::wheel::detail::console_scripts_to_generate(groups->console_scripts, 3, 12)) {
    VENVFIX_FUZZ_CHECK(is_script_name(entry.name));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = venvfix::fuzz::as_text(data, size);
  check_pyvenv_cfg(text);
  const auto [first_line, rest] = venvfix::fuzz::split_once(text);
  check_python_version(first_line);
  check_entry_points(text, first_line);
  return 0;
}
