// What the dynamic loader sees of the system outside the objects it loads: /etc/ld.so.cache,
// the default ("trusted") directories, LD_LIBRARY_PATH and the values of $PLATFORM and $LIB.
//
// The resolver takes this as explicit input so that tests (and `venvfix doctor` when it must
// judge a venv alone) can use a view they control: a cache built for the test, or none.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/elf/ld_cache.hpp"

namespace venvfix::elf {

namespace fs = std::filesystem;

enum class UseLdLibraryPath { no, yes };

struct SystemView {
  std::optional<LdCache> cache;           // none: no cache (as when the file is absent)
  std::vector<fs::path> default_dirs;     // glibc's SYSTEM_DIRS, in search order
  std::vector<fs::path> ld_library_path;  // raw elements; "" means the current directory
  std::string platform;                   // $PLATFORM (the loader's, e.g. "x86_64", "haswell")
  std::string lib;                        // $LIB, e.g. "lib/x86_64-linux-gnu" on Debian
  // Subdirectories tried under every search directory before the directory itself, best
  // first, e.g. "glibc-hwcaps/x86-64-v3", then legacy ones such as "tls/x86_64" (glibc < 2.37).
  std::vector<std::string> hwcap_subdirs;
  // The glibc-hwcaps names this CPU supports, best first (for ld.so.cache hwcaps entries).
  std::vector<std::string> glibc_hwcaps;
  // The dynamic loader used when the main program names none (PT_INTERP), e.g. when a shared
  // library is the root, as under `ld.so --list lib.so`. Empty: none.
  fs::path interpreter;

  // The running host: /etc/ld.so.cache (absent or corrupt: no cache), the default directories,
  // $PLATFORM, $LIB and hwcaps subdirectories as this host's ld.so reports them (`ld.so
  // --help`, glibc >= 2.33; a built-in table for the architecture otherwise), and
  // LD_LIBRARY_PATH from the environment only with UseLdLibraryPath::yes.
  static Result<SystemView> host(UseLdLibraryPath use_ld_library_path);

  // A view with nothing outside the objects themselves: no cache, no default directories, no
  // LD_LIBRARY_PATH; $PLATFORM/$LIB/hwcaps/interpreter still those of the host. For tests.
  static SystemView isolated();
};

// Splits an LD_LIBRARY_PATH value as ld.so does (on ':' and ';'; empty elements are the
// current directory).
std::vector<fs::path> split_ld_library_path(std::string_view value);

}  // namespace venvfix::elf
