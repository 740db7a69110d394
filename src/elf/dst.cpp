#include "dst.hpp"

#include <algorithm>

namespace venvfix::elf::detail {

namespace {

bool is_identifier_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

// is_dst: the length of token `ref` at `input` (just after '$'), braces included; 0 if none.
std::size_t is_dst(std::string_view input, std::string_view ref) {
  bool curly = false;
  if (!input.empty() && input.front() == '{') {
    curly = true;
    input.remove_prefix(1);
  }
  if (!input.starts_with(ref)) return 0;
  const char next = input.size() > ref.size() ? input[ref.size()] : '\0';
  if (curly && next != '}') return 0;
  if (!curly && is_identifier_char(next)) return 0;
  return curly ? ref.size() + 2 : ref.size();
}

}  // namespace

bool has_dst(std::string_view input) {
  for (std::size_t at = input.find('$'); at != std::string_view::npos;
       at = input.find('$', at + 1)) {
    std::string_view rest = input.substr(at + 1);
    if (is_dst(rest, "ORIGIN") != 0 || is_dst(rest, "PLATFORM") != 0 || is_dst(rest, "LIB") != 0) {
      return true;
    }
  }
  return false;
}

std::optional<std::string> substitute_dst(std::string_view input, const DstValues& values) {
  std::string result;
  result.reserve(input.size());
  std::size_t i = 0;
  while (i < input.size()) {
    if (input[i] != '$') {
      result += input[i++];
      continue;
    }
    ++i;
    std::string_view rest = input.substr(i);
    std::size_t length = 0;
    const std::string* replacement = nullptr;
    if ((length = is_dst(rest, "ORIGIN")) != 0) {
      replacement = &values.origin;
    } else if ((length = is_dst(rest, "PLATFORM")) != 0) {
      replacement = &values.platform;
    } else if ((length = is_dst(rest, "LIB")) != 0) {
      replacement = &values.lib;
    }
    if (replacement == nullptr) {
      result += '$';  // not a token ld.so knows: kept literally
      continue;
    }
    if (replacement->empty()) return std::nullopt;
    result += *replacement;
    i += length;
  }
  return result;
}

std::vector<ListDir> decompose(const std::vector<std::string>& elements, const DstValues& values) {
  std::vector<ListDir> dirs;
  for (const std::string& element : elements) {
    std::string dir;
    if (!element.empty()) {
      auto expanded = substitute_dst(element, values);
      if (!expanded || expanded->empty()) continue;
      dir = std::move(*expanded);
      while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      if (dir.back() != '/') dir += '/';
    }
    const bool known = std::any_of(dirs.begin(), dirs.end(),
                                   [&](const ListDir& existing) { return existing.dir == dir; });
    if (!known) dirs.push_back({std::move(dir), element});
  }
  return dirs;
}

std::string origin_of(const std::string& name, const std::string& cwd) {
  if (name.empty()) return {};
  std::string full = name.front() == '/' ? name : cwd + "/" + name;
  const std::size_t slash = full.rfind('/');
  if (slash == 0) return "/";
  return full.substr(0, slash);
}

}  // namespace venvfix::elf::detail
