// The file the real loader opens for a soname, as the tests that hide or check a library need.
#pragma once

#include <dlfcn.h>
#include <link.h>

#include <string>

namespace venvfix::testing {

// dlopen(soname), then the link map's name; empty when the library does not load.
inline std::string loaded_library_path(const char* soname) {
  void* handle = ::dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return {};
  struct link_map* map = nullptr;
  std::string path = ::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 ? map->l_name : "";
  ::dlclose(handle);
  return path;
}

}  // namespace venvfix::testing
