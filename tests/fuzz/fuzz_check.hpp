// Shared by the fuzz targets: a failed invariant aborts, so libFuzzer reports it as a crash.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

#define VENVFIX_FUZZ_CHECK(condition)                                                        \
  do {                                                                                       \
    if (!(condition)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (false)

namespace venvfix::fuzz {

inline std::string_view as_text(const unsigned char* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits at the first '\n': two inputs from one buffer.
inline std::pair<std::string_view, std::string_view> split_once(std::string_view text) {
  std::size_t nl = text.find('\n');
  if (nl == std::string_view::npos) return {text, {}};
  return {text.substr(0, nl), text.substr(nl + 1)};
}

}  // namespace venvfix::fuzz
