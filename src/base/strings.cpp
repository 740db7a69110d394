#include "venvfix/base/strings.hpp"

#include <cstdint>
#include <cstring>

#include <fmt/format.h>

namespace venvfix {

std::size_t find_first_of_few(std::string_view text, std::string_view set, std::size_t start) {
  // One bit per character below 64 (line breaks, tab, quotes, '%', ','): one test per character.
  std::uint64_t below_64 = 0;
  for (char c : set) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 64) return text.find_first_of(set, start);
    below_64 |= std::uint64_t{1} << byte;
  }
  for (std::size_t i = start; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 64 && ((below_64 >> byte) & 1) != 0) return i;
  }
  return std::string_view::npos;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = find_first_of_few(text, "\r\n", start);
    if (end == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
    if (text[end] == '\r' && start < text.size() && text[start] == '\n') ++start;
  }
  return lines;
}

std::size_t count_of(std::string_view text, char c) {
  std::size_t count = 0;
  const char* at = text.data();
  const char* const end = text.data() + text.size();
  while (at != end) {
    const void* found = std::memchr(at, c, static_cast<std::size_t>(end - at));
    if (found == nullptr) break;
    ++count;
    at = static_cast<const char*>(found) + 1;
  }
  return count;
}

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_ascii_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_ascii_space(text.back())) text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = text.find(separator, start);
    if (end == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

std::string to_lower_ascii(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::string printable_excerpt(std::string_view text, std::size_t max_length) {
  std::string out;
  for (char c : text.substr(0, max_length)) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out.push_back(c);
    } else {
      out += fmt::format("\\x{:02x}", u);
    }
  }
  if (text.size() > max_length) out += "…";
  return out;
}

std::string human_size(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(units)) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, units[unit]);
}

std::string replace_all(std::string text, std::string_view key, std::string_view value) {
  if (key.empty()) return text;
  for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at)) {
    text.replace(at, key.size(), value);
    at += value.size();
  }
  return text;
}

}  // namespace venvfix
