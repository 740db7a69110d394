#include "wheel/entry_points.hpp"

#include <algorithm>
#include <optional>

#include "venvfix/base/strings.hpp"

namespace venvfix::wheel::detail {

namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool is_script_name(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return is_word_char(c) || c == '.' || c == '-' || c == '+'; });
}

// distlib's ENTRY_RE callable `\w+([:.]\w+)*`, taken from the start of the value; the rest
// (flags in brackets, or anything else) is ignored as distlib ignores it.
std::optional<EntryPoint> parse_callable(std::string_view name, std::string_view value) {
  std::size_t end = 0;
  bool need_word = true;
  while (end < value.size()) {
    char c = value[end];
    if (is_word_char(c)) {
      need_word = false;
    } else if ((c == ':' || c == '.') && !need_word) {
      need_word = true;
    } else {
      break;
    }
    ++end;
  }
  std::string_view callable = value.substr(0, end);
  if (need_word) {
    // Empty, or ends with a separator that has no word after it: the separator is not part
    // of the match; drop it.
    if (callable.empty()) return std::nullopt;
    callable.remove_suffix(1);
  }
  if (std::count(callable.begin(), callable.end(), ':') != 1) return std::nullopt;
  std::size_t colon = callable.find(':');
  return EntryPoint{std::string(name), std::string(callable.substr(0, colon)),
                    std::string(callable.substr(colon + 1))};
}

void put(std::vector<std::pair<std::string, std::string>>& group, std::string_view name,
         std::string_view value) {
  for (auto& [key, existing] : group) {
    if (key == name) {
      existing = std::string(value);
      return;
    }
  }
  group.emplace_back(std::string(name), std::string(value));
}

bool full_match(std::string_view text, std::string_view prefix, std::string_view suffix_re) {
  // `prefix(\d+(\.\d+)?)?$` for pip, `prefix(-\d+\.\d+)?$` for easy_install.
  if (text.substr(0, prefix.size()) != prefix) return false;
  std::string_view rest = text.substr(prefix.size());
  if (rest.empty()) return true;
  auto digits = [](std::string_view& s) {
    std::size_t n = 0;
    while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
    s.remove_prefix(n);
    return n > 0;
  };
  if (suffix_re == "pip") {
    if (!digits(rest)) return false;
    if (rest.empty()) return true;
    if (rest.front() != '.') return false;
    rest.remove_prefix(1);
    return digits(rest) && rest.empty();
  }
  if (rest.front() != '-') return false;
  rest.remove_prefix(1);
  if (!digits(rest) || rest.empty() || rest.front() != '.') return false;
  rest.remove_prefix(1);
  return digits(rest) && rest.empty();
}

}  // namespace

Result<EntryPointGroups> parse_entry_points(std::string_view text, std::string_view source_name) {
  std::vector<std::pair<std::string, std::string>> console;
  std::vector<std::pair<std::string, std::string>> gui;
  std::optional<std::string> section;
  std::size_t line_number = 0;
  for (std::string_view raw : split_lines(text)) {
    ++line_number;
    std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    if (line.front() == '[' && line.back() == ']') {
      std::size_t first = line.find_first_not_of("[]");
      std::size_t last = line.find_last_not_of("[]");
      section = first == std::string_view::npos ? std::string()
                                                : std::string(line.substr(first, last - first + 1));
      continue;
    }
    if (!section) continue;
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return make_error(ExitCode::usage, "{}: line {} has no '=': {}", source_name, line_number,
                        printable_excerpt(line));
    }
    std::string_view name = trim(line.substr(0, eq));
    std::string_view value = trim(line.substr(eq + 1));
    if (*section == "console_scripts") put(console, name, value);
    if (*section == "gui_scripts") put(gui, name, value);
  }
  EntryPointGroups groups;
  for (auto [pairs, out] :
       {std::pair{&console, &groups.console_scripts}, std::pair{&gui, &groups.gui_scripts}}) {
    for (const auto& [name, value] : *pairs) {
      if (!is_script_name(name)) {
        return make_error(ExitCode::usage,
                          "{}: script name {:?} is not made of letters, digits, '_', '.', '-', "
                          "'+'",
                          source_name, printable_excerpt(name));
      }
      auto entry = parse_callable(name, value);
      if (!entry) {
        return make_error(ExitCode::usage,
                          "{}: entry point {} = {} is not of the form module:callable", source_name,
                          name, printable_excerpt(value));
      }
      out->push_back(std::move(*entry));
    }
  }
  return groups;
}

std::vector<EntryPoint> console_scripts_to_generate(const std::vector<EntryPoint>& console,
                                                    int python_major, int python_minor) {
  std::vector<EntryPoint> rest = console;
  std::vector<EntryPoint> out;
  const std::string major_minor = fmt::format("{}.{}", python_major, python_minor);
  auto take = [&rest](std::string_view name) -> std::optional<EntryPoint> {
    for (auto it = rest.begin(); it != rest.end(); ++it) {
      if (it->name == name) {
        EntryPoint found = *it;
        rest.erase(it);
        return found;
      }
    }
    return std::nullopt;
  };
  auto renamed = [](EntryPoint entry, std::string name) {
    entry.name = std::move(name);
    return entry;
  };
  if (auto pip = take("pip")) {
    out.push_back(*pip);
    out.push_back(renamed(*pip, fmt::format("pip{}", python_major)));
    out.push_back(renamed(*pip, "pip" + major_minor));
    std::erase_if(rest, [](const EntryPoint& e) { return full_match(e.name, "pip", "pip"); });
  }
  if (auto easy = take("easy_install")) {
    out.push_back(*easy);
    out.push_back(renamed(*easy, "easy_install-" + major_minor));
    std::erase_if(rest, [](const EntryPoint& e) {
      return full_match(e.name, "easy_install", "easy_install");
    });
  }
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

std::string launcher_shebang(std::string_view executable) {
  std::string exe(executable);
  if (exe.find(' ') != std::string::npos && exe.front() != '"') exe = "\"" + exe + "\"";
  // distlib: '#!' prefix and newline suffix count; the limit on Linux is 127.
  if (exe.find(' ') == std::string::npos && exe.size() + 3 <= 127) return "#!" + exe + "\n";
  return "#!/bin/sh\n'''exec' " + exe + " \"$0\" \"$@\"\n' '''\n";
}

std::string launcher_script(std::string_view executable, const EntryPoint& entry) {
  std::string import_name = entry.attr.substr(0, entry.attr.find('.'));
  return launcher_shebang(executable) +
         fmt::format(
             "# -*- coding: utf-8 -*-\n"
             "import re\n"
             "import sys\n"
             "from {} import {}\n"
             "if __name__ == '__main__':\n"
             "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
             "    sys.exit({}())\n",
             entry.module, import_name, entry.attr);
}

}  // namespace venvfix::wheel::detail
