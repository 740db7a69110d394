// The platform venvfix runs on, as wheel tags need it (PEP 600 manylinux, PEP 656 musllinux).
// The venv's own interpreter is never asked: the host is the platform that will load the
// libraries.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace venvfix::env {

struct HostPlatform {
  std::string arch;                          // uname(2) machine: "x86_64", "aarch64"
  std::optional<std::pair<int, int>> glibc;  // gnu_get_libc_version(), when linked to glibc
  std::optional<std::pair<int, int>> musl;   // best effort: from /lib/ld-musl-<arch>.so.1
  std::string system;                        // uname sysname: "Linux"
  std::string release;                       // uname release
  std::string version;                       // uname version
};

// Never fails: fields it cannot learn stay empty.
HostPlatform detect_host();

}  // namespace venvfix::env
