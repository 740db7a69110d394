// A fast walk of site-packages for files named like shared objects: the candidates for ELF
// targets and for orphan-library detection (an ELF object that no RECORD lists).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::dist {

namespace fs = std::filesystem;

struct ScannedFile {
  fs::path path;                  // absolute: <site-packages>/<relative>
  std::size_t site_packages = 0;  // index into Venv::site_packages
  FileIdentity identity;          // lstat(2): a symlink reports itself (mode says so)
  bool is_symlink() const;
};

// True for "libx.so", "libx.so.9", "libx.so.9.1", "_C.cpython-312-x86_64-linux-gnu.so"; false
// for "x.sox", "x.so.", ".so", "x.py".
bool looks_like_shared_object(std::string_view file_name);

// Every regular file or symlink under each site-packages whose name looks like a shared object,
// sorted by path. Symlinked directories are not entered (no loops, no escaping the venv);
// directories named ".venvfix" or "__pycache__" are skipped; unreadable directories are
// skipped with a debug log. Uses openat/fstatat on directory descriptors.
// A directory whose name starts with '~' is pip's uninstall stash (pip renames what it
// uninstalls to "~orch", "nvidia/~udnn", "~orch-2.8.0.dist-info" and deletes it on commit):
// nothing imports or loads from it, so it is not entered; when `stashes` is given, each such
// directory's absolute path is appended to it (sorted).
std::vector<ScannedFile> scan_site_packages(const env::Venv& venv,
                                            std::vector<fs::path>* stashes = nullptr);

}  // namespace venvfix::dist
