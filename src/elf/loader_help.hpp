// Private: what the host's dynamic loader says about itself (`ld.so --help`, glibc >= 2.33).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace venvfix::elf::detail {

struct LoaderHelp {
  std::vector<std::string> system_dirs;    // "Shared library search path" (system search path)
  std::vector<std::string> glibc_hwcaps;   // supported and searched, in priority order
  std::vector<std::string> legacy_hwcaps;  // searched legacy hwcap names, highest bit first
  bool legacy_tls = false;                 // "tls" is searched
  std::string legacy_platform;             // the AT_PLATFORM legacy subdirectory, if searched
};

// Parses the text `ld.so --help` prints.
LoaderHelp parse_loader_help(std::string_view text);

// Runs `interpreter --help` with an empty environment and returns its stdout, or nullopt when
// it fails (older glibc, musl) or cannot be started: then `not_started` (optional) says why
// ("pipe: …", "posix_spawn: …", the latter after waiting for a process slot as run_process
// does).
std::optional<std::string> run_loader_help(const std::filesystem::path& interpreter,
                                           std::string* not_started = nullptr);

// The legacy hwcap subdirectories glibc 2.26–2.36 tries under each search directory, in
// order (elf/dl-hwcaps.c, _dl_important_hwcaps): every combination of tls, the platform and
// the supported hwcap names, largest first. Empty when nothing legacy is searched.
std::vector<std::string> legacy_subdirs(const LoaderHelp& help);

}  // namespace venvfix::elf::detail
