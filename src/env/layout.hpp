// Shared by venv.cpp and prefix.cpp: the lib/pythonX.Y directories of a prefix or venv, and how
// a prefix's own files lay out its site-packages.
#pragma once

#include <sys/stat.h>

#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::env::detail {

fs::path normalised_absolute(const fs::path& path);
bool is_dir_stat(const fs::path& path, struct stat* out = nullptr);

// A directory under lib/ or lib64/ that holds a Python's library: "python3.12", "python3.13t",
// "pypy3.10".
struct LibDir {
  std::string name;
  int major = 0;
  int minor = 0;
  bool pypy = false;
};

std::optional<LibDir> parse_lib_dir_name(std::string_view name);
// Every such directory under root/lib and root/lib64, sorted by name, each name once.
std::vector<LibDir> find_lib_dirs(const fs::path& root);
// Orders candidates for the wanted version: "pythonX.Y" before "pythonX.Yt" before pypy.
int lib_dir_rank(const LibDir& dir);

// The site-packages of a prefix without pyvenv.cfg, in the order its interpreter's sys.path
// has them (docs/inventory.md), with purelib/platlib/system_site_packages filled in `env`
// (root, python and lib_dir_name already set). `stdlib` is the directory holding the
// interpreter's site.py (may be empty: then the prefix is taken to be a plain CPython one).
// `as_written` is the prefix as getpath found it, before its dot segments were resolved as
// text: site.py asks the kernel whether a site-packages exists under that, and names it by
// `prefix` (os.path.abspath). Empty: `prefix` itself. Adds nothing when none exists; the
// caller decides whether that is an error.
void add_prefix_site_packages(Venv& env, const fs::path& prefix, const fs::path& stdlib,
                              Layer layer, const fs::path& as_written = {});

// The names a prefix's or venv's interpreter goes by under bin/, in the order venvfix tries them:
// python3, python, then <lib_dir_name> ("python3.12").
std::array<std::string, 3> interpreter_names(const std::string& lib_dir_name);

// The standard library directory (lib/<lib_dir_name>, holding os.py) of the interpreter that
// owns `prefix`: the prefix's own, else that of the real file its bin/python3 (python,
// pythonX.Y) symlink leads to. Empty when neither exists.
fs::path find_stdlib(const fs::path& prefix, const std::string& lib_dir_name);

// How getpath joins a landmark onto a candidate prefix before asking the kernel whether it
// exists: 3.8-3.10's getpath.c as written; 3.11+'s getpath.py (joinpath) through normpath, so
// that "hop/.." is read as text even where hop is a symlink.
enum class LandmarkJoin { as_written, normalised };

// Where CPython's getpath looks for the standard library from pyvenv.cfg's `home`: `home` itself,
// then each directory above it (cut at the last '/', as its dirname() and reduce() cut, so blanks
// and dot segments stay), until one holds lib/<lib_dir_name>/os.py or os.pyc; "/" is never
// tried. The prefix found as written (relative to the working directory when `home` is
// relative), or empty.
fs::path search_up_for_prefix(std::string_view home, const std::string& lib_dir_name,
                              LandmarkJoin join);

// Opens a directory without pyvenv.cfg as a Python prefix.
Result<Venv> open_prefix_at(const fs::path& root, const OpenOptions& options);

// Sets env.state for a prefix: <root>/.venvfix when that can be written, else
// <cache>/prefixes/<name>-<sha256 of the path, 16 hex>, said once as a warning.
void place_prefix_state(Venv& env, const OpenOptions& options);

}  // namespace venvfix::env::detail
