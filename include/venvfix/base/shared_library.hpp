// A shared library opened with dlopen when first needed, instead of linked. venvfix links
// libcurl and libarchive this way: with their thirty-odd dependencies they cost about 10 ms at
// every process start, which `doctor`, `run` and `snapshot` (they never download or unpack)
// would pay for nothing (docs/benchmarks.md). A library stays loaded until the process exits.
#pragma once

#include <bit>
#include <string>
#include <string_view>

#include "venvfix/base/result.hpp"

namespace venvfix {

class SharedLibrary {
 public:
  // dlopen(soname, RTLD_NOW | RTLD_LOCAL). The error is one sentence naming the soname, what
  // venvfix needs it for (`needed_for`, "to download wheels") and the loader's reason.
  static Result<SharedLibrary> open(const std::string& soname, std::string_view needed_for);

  // Sets `function` to the library's function `name`. The caller declares `function` with the
  // type of the library header's own declaration (decltype(&::curl_easy_init)), so the compiler
  // checks every call against the header the build found.
  template <typename Function>
  Status find(const char* name, Function& function) const {
    VENVFIX_TRY_ASSIGN(void* address, find_address(name));
    function = std::bit_cast<Function>(address);
    return ok();
  }

 private:
  SharedLibrary(void* handle, std::string soname) : m_handle(handle), m_soname(std::move(soname)) {}
  Result<void*> find_address(const char* name) const;

  void* m_handle;  // never closed: the functions found stay valid for the life of the process
  std::string m_soname;
};

// Stops the process, naming the library and why it did not load: for code that may run only
// after its library loaded (it holds a handle the library made). A bug in venvfix, not a
// user's error.
[[noreturn]] void library_used_unloaded(const Error& load_error);

// How the process reports an error it cannot return: main installs one that prints the
// sentence (and, with --json, the error document) as for any failed command.
using FatalErrorReporter = void (*)(const Error& error);
void set_fatal_error_reporter(FatalErrorReporter reporter);

// Ends the process, with the error reported and its exit code, where a library that a step
// which cannot fail needs (libcrypto for a digest) did not load: a broken installation, not a
// bug. To the venv this is a crash; a transaction's plan has made a digest of the venv's state
// before its journal, so it comes before any change (one in the middle of a transaction would
// leave its journal for `venvfix recover`, docs/transactions.md).
[[noreturn]] void exit_for_missing_library(const Error& load_error);

// A library's function table, made by `open` (which loads the library and finds the functions)
// on the first call and kept for the life of the process; thread-safe. A failure is kept too:
// every call returns the first call's error.
template <typename Functions, Result<Functions> (*open)()>
Result<const Functions*> load_once() {
  static const Result<Functions> loaded = open();
  if (!loaded) return loaded.error();
  return &*loaded;
}

// The table of a library load_once<Functions, open>() has loaded (see library_used_unloaded).
template <typename Functions, Result<Functions> (*open)()>
const Functions& loaded_functions() {
  Result<const Functions*> loaded = load_once<Functions, open>();
  if (!loaded) library_used_unloaded(loaded.error());
  return **loaded;
}

}  // namespace venvfix
