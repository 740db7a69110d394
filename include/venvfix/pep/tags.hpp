// Wheel compatibility tags (PEP 425, manylinux PEP 600, musllinux PEP 656): the ordered list of
// tags an interpreter accepts, most preferred first, exactly as pip builds it (pip's
// get_supported(): packaging's cpython_tags() then compatible_tags() with `cpXY-none-any`).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace venvfix::pep {

struct Tag {
  std::string interpreter;  // cp312, py3
  std::string abi;          // cp312, abi3, none
  std::string platform;     // manylinux_2_17_x86_64, linux_x86_64, any

  std::string to_string() const { return interpreter + "-" + abi + "-" + platform; }
  friend bool operator==(const Tag&, const Tag&) = default;
};

// The interpreter and platform to produce tags for (read from a venv by the env module).
struct TargetPython {
  int major = 3;
  int minor = 0;
  std::string implementation = "cp";         // cp (CPython); anything else gets generic tags
  std::string arch;                          // platform.machine(): x86_64, aarch64, ppc64le, ...
  std::optional<std::pair<int, int>> glibc;  // the host's glibc, nullopt on non-glibc systems
  std::optional<std::pair<int, int>> musl;   // the musl version when the interpreter uses musl
  // The full Python version for markers (`3.12.3`, `3.13.0rc1`), from pyvenv.cfg; empty means
  // `<major>.<minor>.0`.
  std::string full_version;
};

// Platform tags for Linux, most preferred first: manylinux_<glibc>_<arch> down to the oldest
// the architecture has (2_5 on x86_64/i686, 2_17 elsewhere) with manylinux2014/2010/1 right
// after 2_17/2_12/2_5, then musllinux_1_N down to 1_0 when musl is set, then linux_<arch>.
std::vector<std::string> linux_platform_tags(const TargetPython& target);

// All tags the target accepts, in pip's order of preference (index 0 is best).
std::vector<Tag> supported_tags(const TargetPython& target);

}  // namespace venvfix::pep
