// Helpers for the tests that compare venvfix's pep module with Python `packaging` and pip.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace venvfix::pep::testing {

// The first executable `python3` on PATH, or nullopt.
inline std::optional<std::filesystem::path> find_python3() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::string_view rest(path);
  while (!rest.empty()) {
    std::size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (dir.empty()) continue;
    std::filesystem::path candidate = std::filesystem::path(dir) / "python3";
    std::error_code ec;
    auto status = std::filesystem::status(candidate, ec);
    if (!ec && std::filesystem::is_regular_file(status) &&
        (status.permissions() & std::filesystem::perms::owner_exec) !=
            std::filesystem::perms::none) {
      return candidate;
    }
  }
  return std::nullopt;
}

// Single-quotes `s` for /bin/sh.
inline std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

// A deterministic source of random choices.
class Gen {
 public:
  explicit Gen(std::uint64_t seed) : m_rng(seed) {}
  std::size_t below(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(m_rng);
  }
  bool chance(int percent) { return static_cast<int>(below(100)) < percent; }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[below(items.size())];
  }
  std::string digits(std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(static_cast<char>('0' + below(10)));
    return out;
  }

 private:
  std::mt19937_64 m_rng;
};

}  // namespace venvfix::pep::testing
