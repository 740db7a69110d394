// Private: dynamic string tokens ($ORIGIN, $LIB, $PLATFORM) and search-list decomposition,
// transcribed from glibc's elf/dl-load.c (is_dst, _dl_dst_substitute, fillin_rpath).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace venvfix::elf::detail {

struct DstValues {
  std::string origin;    // empty: unknown (a path using $ORIGIN is dropped)
  std::string platform;  // empty: unknown (a path using $PLATFORM is dropped)
  std::string lib;
};

// True when `input` holds a token ld.so knows ($ORIGIN, $PLATFORM, $LIB, braced or not).
bool has_dst(std::string_view input);

// _dl_dst_substitute: the input with every known token replaced. nullopt when a known token
// has no value (ld.so then drops the path). Unknown "$NAME" sequences are kept as written.
std::optional<std::string> substitute_dst(std::string_view input, const DstValues& values);

struct ListDir {
  std::string dir;    // with exactly one trailing '/' ("/" for the root); "" = current directory
  std::string entry;  // the raw element it came from
};

// fillin_rpath: expands each element, drops elements that expand to nothing, strips trailing
// slashes and adds one, keeps empty elements as the current directory, and removes repeats.
std::vector<ListDir> decompose(const std::vector<std::string>& elements, const DstValues& values);

// The directory of a loaded object's name (l_origin): a relative name is taken from `cwd`;
// nothing is canonicalised ("/a/./b/libx.so" gives "/a/./b").
std::string origin_of(const std::string& name, const std::string& cwd);

}  // namespace venvfix::elf::detail
