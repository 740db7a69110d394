#include "venvfix/base/shared_library.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include <spdlog/spdlog.h>

namespace venvfix {

namespace {

std::string loader_reason() {
  const char* reason = ::dlerror();
  return reason ? reason : "no reason given";
}

std::atomic<FatalErrorReporter> fatal_error_reporter{nullptr};

}  // namespace

Result<SharedLibrary> SharedLibrary::open(const std::string& soname, std::string_view needed_for) {
  void* handle = ::dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    return make_error(ExitCode::error, "cannot load {}, which venvfix needs {}: {}", soname,
                      needed_for, loader_reason());
  }
  return SharedLibrary(handle, soname);
}

Result<void*> SharedLibrary::find_address(const char* name) const {
  ::dlerror();  // forget an earlier failure, so the reason given is this one's
  void* address = ::dlsym(m_handle, name);
  if (!address) {
    return make_error(ExitCode::error, "{} has no function {}: {}", m_soname, name,
                      loader_reason());
  }
  return address;
}

void set_fatal_error_reporter(FatalErrorReporter reporter) {
  fatal_error_reporter.store(reporter);
}

void exit_for_missing_library(const Error& load_error) {
  // The first thread to get here reports; any other waits for the exit.
  static std::atomic<bool> reported{false};
  if (reported.exchange(true)) {
    for (;;) ::pause();
  }
  if (FatalErrorReporter reporter = fatal_error_reporter.load()) {
    reporter(load_error);
  } else {
    std::fprintf(stderr, "venvfix: error: %s\n", load_error.message.c_str());
  }
  std::fflush(nullptr);
  ::_exit(static_cast<int>(load_error.code));
}

void library_used_unloaded(const Error& load_error) {
  spdlog::critical("a library's function was called although it did not load: {}",
                   load_error.message);
  std::abort();
}

}  // namespace venvfix
