// A walk over a venv's tree as the tests compare it: every entry but venvfix's own state.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <string>
#include <system_error>

namespace venvfix::testing {

// Calls `visit(relative path, lstat of the entry)` for every entry under `root` except
// <root>/.venvfix (the lock, hash cache, journal and snapshots) and what is below it; an entry
// lstat cannot read is passed over. Returns the error that ended the walk early, if any.
inline std::error_code walk_venv_tree(
    const std::filesystem::path& root,
    const std::function<void(const std::string&, const struct stat&)>& visit) {
  std::error_code error;
  for (std::filesystem::recursive_directory_iterator it(root, error), end; !error && it != end;
       it.increment(error)) {
    const std::string rel = it->path().lexically_relative(root).generic_string();
    if (rel == ".venvfix") {
      it.disable_recursion_pending();
      continue;
    }
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0) visit(rel, st);
  }
  return error;
}

}  // namespace venvfix::testing
