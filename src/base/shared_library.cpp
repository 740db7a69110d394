#include "venvfix/base/shared_library.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include <spdlog/spdlog.h>

namespace venvfix {

namespace {

std::string loader_reason() {
  const char* reason = ::dlerror();
  return reason ? reason : "no reason given";
}

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

void library_used_unloaded(const Error& load_error) {
  spdlog::critical("a library's function was called although it did not load: {}",
                   load_error.message);
  std::abort();
}

}  // namespace venvfix
