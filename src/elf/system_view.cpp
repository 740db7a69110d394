#include "venvfix/elf/system_view.hpp"

#include <sys/auxv.h>

#include <cstdlib>

#include "loader_help.hpp"
#include "venvfix/base/log.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/elf/elf_file.hpp"

namespace venvfix::elf {

namespace {

// Fallbacks for a loader that cannot describe itself (glibc < 2.33). These are glibc's
// SYSTEM_DIRS for a multiarch (Debian/Ubuntu) or a lib64 (Fedora/RHEL/SUSE) layout.
struct ArchDefaults {
  std::string_view interpreter;
  std::string_view triplet;
  std::string_view lib64;
};

ArchDefaults arch_defaults() {
#if defined(__x86_64__)
  return {"/lib64/ld-linux-x86-64.so.2", "x86_64-linux-gnu", "lib64"};
#elif defined(__aarch64__)
  return {"/lib/ld-linux-aarch64.so.1", "aarch64-linux-gnu", "lib64"};
#elif defined(__powerpc64__)
  return {"/lib64/ld64.so.2", "powerpc64le-linux-gnu", "lib64"};
#elif defined(__s390x__)
  return {"/lib/ld64.so.1", "s390x-linux-gnu", "lib64"};
#elif defined(__i386__)
  return {"/lib/ld-linux.so.2", "i386-linux-gnu", "lib"};
#else
  return {"", "", "lib"};
#endif
}

fs::path host_interpreter() {
  // The loader that runs venvfix itself is the host's loader for its own architecture.
  auto self = read_elf("/proc/self/exe");
  if (self && self->has_value() && !(*self)->interpreter.empty()) return (*self)->interpreter;
  return std::string(arch_defaults().interpreter);
}

// The kernel's AT_PLATFORM; glibc replaces it with its own name for the CPU ("haswell",
// "xeon_phi" on some Intel CPUs), so the loader's --help, when it answers, wins over this.
std::string host_platform() {
  // getauxval returns AT_PLATFORM's pointer as an integer.
  const auto* platform =
      reinterpret_cast<const char*>(getauxval(AT_PLATFORM));  // NOLINT(performance-no-int-to-ptr)
  return platform != nullptr ? platform : "";
}

// $LIB: glibc substitutes DL_DST_LIB, the last component of its slibdir, which Debian
// patches to "lib/<triplet>". slibdir is the first system directory.
std::string lib_for(const std::vector<fs::path>& default_dirs) {
  if (default_dirs.empty()) return std::string(arch_defaults().lib64);
  const std::string first = default_dirs.front().string();
  const std::string_view triplet = arch_defaults().triplet;
  if (!triplet.empty() && first.ends_with(std::string("/lib/") + std::string(triplet))) {
    return "lib/" + std::string(triplet);
  }
  return default_dirs.front().filename().string();
}

std::vector<fs::path> fallback_default_dirs() {
  const ArchDefaults defaults = arch_defaults();
  const fs::path multiarch = fs::path("/lib") / std::string(defaults.triplet);
  std::error_code ec;
  if (!defaults.triplet.empty() && fs::is_directory(multiarch, ec)) {
    return {multiarch, fs::path("/usr/lib") / std::string(defaults.triplet), "/lib", "/usr/lib"};
  }
  if (defaults.lib64 == "lib64") return {"/lib64", "/usr/lib64"};
  return {"/lib", "/usr/lib"};
}

}  // namespace

std::vector<fs::path> split_ld_library_path(std::string_view value) {
  std::vector<fs::path> dirs;
  if (value.empty()) return dirs;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= value.size(); ++i) {
    if (i == value.size() || value[i] == ':' || value[i] == ';') {
      dirs.emplace_back(std::string(value.substr(start, i - start)));
      start = i + 1;
    }
  }
  return dirs;
}

namespace {

// Everything but the cache and LD_LIBRARY_PATH: what the loader reports about itself.
SystemView loader_view() {
  SystemView view;
  view.platform = host_platform();
  view.interpreter = host_interpreter();
  std::string not_started;
  if (std::optional<std::string> text = detail::run_loader_help(view.interpreter, &not_started)) {
    detail::LoaderHelp help = detail::parse_loader_help(*text);
    view.default_dirs.assign(help.system_dirs.begin(), help.system_dirs.end());
    for (const std::string& name : help.glibc_hwcaps) {
      view.hwcap_subdirs.push_back("glibc-hwcaps/" + name);
    }
    view.glibc_hwcaps = help.glibc_hwcaps;
    // What $PLATFORM expands to: GLRO(dl_platform), which --help prints as the AT_PLATFORM line.
    if (!help.legacy_platform.empty()) view.platform = help.legacy_platform;
    for (std::string& sub : detail::legacy_subdirs(help)) view.hwcap_subdirs.push_back(sub);
  } else if (!not_started.empty()) {
    // The loader's own answer is what venvfix checks its search against: say it is missing.
    spdlog::warn(
        "cannot ask the loader {} where it searches ({}); assuming its default "
        "directories, without glibc-hwcaps subdirectories",
        view.interpreter.string(), not_started);
  } else {
    spdlog::debug("{} --help gave nothing; using built-in default directories",
                  view.interpreter.string());
  }
  if (view.default_dirs.empty()) view.default_dirs = fallback_default_dirs();
  view.lib = lib_for(view.default_dirs);
  return view;
}

}  // namespace

SystemView SystemView::isolated() {
  SystemView view = loader_view();
  view.default_dirs.clear();
  return view;
}

Result<SystemView> SystemView::host(UseLdLibraryPath use_ld_library_path) {
  SystemView view = loader_view();
  auto cache = LdCache::load("/etc/ld.so.cache");
  if (cache) {
    view.cache = std::move(*cache);
  } else {
    // ld.so ignores an absent or unusable cache; so does the view, with a note.
    spdlog::debug("no usable loader cache: {}", cache.error().message);
  }
  if (use_ld_library_path == UseLdLibraryPath::yes) {
    if (const char* value = std::getenv("LD_LIBRARY_PATH")) {
      view.ld_library_path = split_ld_library_path(value);
    }
  }
  return view;
}

}  // namespace venvfix::elf
