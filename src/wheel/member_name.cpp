#include "wheel/member_name.hpp"

namespace venvfix::wheel::detail {

std::optional<std::string> unsafe_name_reason(std::string_view name) {
  if (name.empty()) return "has an empty name";
  if (name.size() > 4096) return "has a name longer than 4096 bytes";
  if (name.front() == '/') return "is an absolute path";
  for (char c : name) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '\\') return "has a backslash in its name";
    if (byte < 0x20 || byte == 0x7f) return "has a control character in its name";
  }
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    std::string_view part = name.substr(start, end - start);
    if (part.empty()) return "has an empty path component";
    if (part == ".") return "has a '.' path component";
    if (part == "..") return "has a '..' path component";
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace venvfix::wheel::detail
