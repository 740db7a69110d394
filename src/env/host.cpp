// The host platform: uname(2), the C library's version.
#include "venvfix/env/host.hpp"

#include <glob.h>
#include <gnu/libc-version.h>
#include <sys/utsname.h>

#include <charconv>
#include <string_view>

#include "venvfix/base/fs.hpp"

namespace venvfix::env {

namespace {

// "2.36" -> {2, 36}; stops at the first non-digit after the minor.
std::optional<std::pair<int, int>> parse_major_minor(std::string_view text) {
  int major = 0;
  int minor = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), major);
  if (ec != std::errc() || p == text.data() + text.size() || *p != '.') return std::nullopt;
  ++p;
  auto [q, ec2] = std::from_chars(p, text.data() + text.size(), minor);
  if (ec2 != std::errc() || q == p) return std::nullopt;
  return std::pair{major, minor};
}

// musl's dynamic loader holds its version as a NUL-terminated string ("1.2.4") next to its
// usage text; packaging runs the loader to read it, venvfix reads the file instead (best
// effort: the first NUL-delimited string that looks like "1.N.M").
std::optional<std::pair<int, int>> detect_musl() {
  glob_t matches{};
  if (::glob("/lib/ld-musl-*.so.1", 0, nullptr, &matches) != 0) {
    ::globfree(&matches);
    return std::nullopt;
  }
  std::string loader = matches.gl_pathv[0];
  ::globfree(&matches);
  auto mapped = MappedFile::open(loader);
  if (!mapped) return std::nullopt;
  std::string_view bytes = mapped->view();
  std::size_t start = 0;
  while (start < bytes.size()) {
    std::size_t end = bytes.find('\0', start);
    if (end == std::string_view::npos) end = bytes.size();
    std::string_view candidate = bytes.substr(start, end - start);
    if (candidate.size() >= 5 && candidate.size() <= 8 && candidate.starts_with("1.") &&
        candidate.find_first_not_of("0123456789.") == std::string_view::npos) {
      if (auto version = parse_major_minor(candidate)) return version;
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

HostPlatform detect_host() {
  HostPlatform host;
  struct utsname names {};
  if (::uname(&names) == 0) {
    host.arch = names.machine;
    host.system = names.sysname;
    host.release = names.release;
    host.version = names.version;
  }
  host.glibc = parse_major_minor(::gnu_get_libc_version());
  host.musl = detect_musl();
  return host;
}

}  // namespace venvfix::env
