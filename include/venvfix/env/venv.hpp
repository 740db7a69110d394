// The virtual environment venvfix works on, read from pyvenv.cfg and the layout on disk.
// The venv's interpreter is never run: a venv whose torch is broken, or whose python was built
// for another machine, must still be diagnosed.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"

namespace venvfix::env {

namespace fs = std::filesystem;

struct PythonVersion {
  int major = 0;
  int minor = 0;
  int micro = 0;
  std::string full;  // as pyvenv.cfg wrote it ("3.12.3", "3.11.7.final.0"), or "3.12" when
                     // derived from the lib/python3.12 directory name
};

struct Venv {
  fs::path root;  // absolute and lexically normalised; symlinks are not resolved
  PythonVersion python;
  std::string implementation;  // lowercase: "cpython", "pypy"
  // Every existing site-packages directory in sys.path order: lib/pythonX.Y/site-packages,
  // then lib64/pythonX.Y/site-packages when it is a different directory (a lib64 symlink to
  // lib is one directory, listed once under lib/).
  std::vector<fs::path> site_packages;
  fs::path purelib;  // lib/pythonX.Y/site-packages (where pip puts pure-Python wheels)
  fs::path platlib;  // lib64/... when it is a distinct existing directory, else purelib
  bool include_system_site_packages = false;
  fs::path home;  // pyvenv.cfg's "home" (the base interpreter's bin directory); may be empty
  // The directory name under lib/ ("python3.12", "python3.13t", "pypy3.10").
  std::string lib_dir_name;

  fs::path state_dir() const { return root / ".venvfix"; }
};

// The key/value pairs of a pyvenv.cfg, parsed as CPython's site.py does: one "key = value" per
// line, keys trimmed and lowercased, values trimmed; lines without "=" are ignored.
struct PyvenvCfg {
  std::vector<std::pair<std::string, std::string>> entries;
  // The value of the first entry with this (lowercase) key.
  std::optional<std::string> get(std::string_view key) const;
};

// Fails (naming `source_name`) only when the text is not UTF-8 or contains NUL bytes.
Result<PyvenvCfg> parse_pyvenv_cfg(std::string_view text, std::string_view source_name);

// Parses "3.12.3", "3.11.7.final.0", "3.13.0rc1", "3.12": at least major.minor.
std::optional<PythonVersion> parse_python_version(std::string_view text);

// Opens the venv at `root` (a directory holding pyvenv.cfg). Errors (ExitCode::usage) name the
// directory or file: not a directory, no pyvenv.cfg, an unreadable or malformed pyvenv.cfg, no
// way to tell the Python version (neither "version"/"version_info" nor a lib/pythonX.Y dir),
// no site-packages directory.
Result<Venv> open_venv_at(const fs::path& root);

// Finds the venv: `explicit_path` (--venv), else $VIRTUAL_ENV, else ./.venv; with none of them
// an ExitCode::usage error that says what was tried.
Result<Venv> open_venv(const std::optional<fs::path>& explicit_path);

}  // namespace venvfix::env
