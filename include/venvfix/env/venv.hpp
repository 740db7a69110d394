// The Python environment venvfix works on: a venv (pyvenv.cfg) or a plain prefix (/usr/local, a
// pyenv version, a `pip install --prefix` tree), read from the layout and the prefix's own
// files. The interpreter is never run: a venv whose torch is broken, or whose python was built
// for another machine, must still be diagnosed.
#pragma once

#include <cstddef>
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

enum class EnvKind { venv, prefix };

// Which environment a site-packages directory belongs to: the one venvfix was pointed at, or the
// base prefix a venv with include-system-site-packages = true also sees. A plan never writes
// into the base unless asked to (--allow-base).
enum class Layer { own, base };
std::string_view to_string(Layer layer);  // "own", "base"

struct Venv {
  fs::path root;  // absolute and lexically normalised; symlinks are not resolved
  EnvKind kind = EnvKind::venv;
  PythonVersion python;
  std::string implementation;  // lowercase: "cpython", "pypy"
  // Every existing site-packages directory in sys.path order (docs/inventory.md): for a venv
  // lib/pythonX.Y/site-packages, then lib64/pythonX.Y/site-packages when it is a different
  // directory (a lib64 symlink to lib is one directory, listed once under lib/); for a Debian
  // prefix its dist-packages directories. Then, with include-system-site-packages, the base
  // prefix's directories (Layer::base in site_layers).
  std::vector<fs::path> site_packages;
  // Parallel to site_packages; an index past its end is Layer::own.
  std::vector<Layer> site_layers;
  // The directories of site_packages whose distributions a system package manager installed
  // (Debian's lib/python3/dist-packages, lib/pythonX.Y/dist-packages): a distribution there that
  // pip or uv did not install is owned by the system and never removed or replaced.
  std::vector<fs::path> system_site_packages;
  fs::path purelib;  // where pip puts pure-Python wheels (lib/pythonX.Y/site-packages)
  fs::path platlib;  // lib64/... when it is a distinct existing directory, else purelib
  bool include_system_site_packages = false;
  // pyvenv.cfg's "home" (the base interpreter's directory) as the venv's getpath reads it; empty
  // where it reads none (getpath_home below).
  fs::path home;
  // With include-system-site-packages: the base interpreter's prefix, found as getpath finds it.
  fs::path base_prefix;
  // The directory name under lib/ ("python3.12", "python3.13t", "pypy3.10").
  std::string lib_dir_name;
  // Where locks, journals, snapshots and the hash cache live when not <root>/.venvfix (a prefix
  // venvfix cannot write: under the cache directory, keyed by the prefix path).
  fs::path state;

  fs::path state_dir() const { return state.empty() ? root / ".venvfix" : state; }
  Layer layer_of(const fs::path& site) const;
  bool is_system_site(const fs::path& site) const;
};

// The key/value pairs of a pyvenv.cfg, read as site.py reads it: UTF-8 text split into lines at
// "\n", "\r\n" or "\r" (Python's universal newlines); a line without "=" is ignored; the key is
// before the first "=", stripped of Python's whitespace (str.strip(), Unicode spaces included)
// and lowercased (str.lower(): ASCII, and the Kelvin sign U+212A, the one non-ASCII letter whose
// lowercase is ASCII); the value is stripped the same way. site.py takes the last of a repeated
// `include-system-site-packages`. `home` is read by getpath instead, its own way (getpath_home).
// tests/env/pyvenv_cfg_python_test.cpp holds both against every pyenv interpreter.
struct PyvenvCfg {
  std::vector<std::pair<std::string, std::string>> entries;
  std::string text;  // the file as read, for getpath_home
  // The value of the first entry with this (lowercase) key (`version`, `implementation`: keys
  // only the tools that write the file read).
  std::optional<std::string> get(std::string_view key) const;
  // The value of the last entry with this key: how site.py reads its keys.
  std::optional<std::string> last(std::string_view key) const;
};

// Fails (naming `source_name`) only when the text is not UTF-8: site.py then raises
// UnicodeDecodeError and the venv's interpreter does not start.
Result<PyvenvCfg> parse_pyvenv_cfg(std::string_view text, std::string_view source_name);

// How CPython's getpath reads `home` from pyvenv.cfg, each version its own way, and neither the
// way site.py reads the other keys (tests/env/pyvenv_cfg_python_test.cpp holds both against
// every pyenv interpreter, symlinked and copied venvs).
enum class HomeReader {
  // Python 3.8-3.10 (getpath.c's _Py_FindEnvConfigValue): lines end at "\n" only, and one
  // without it (the last, one over 8 KiB, one with a NUL) ends the scan; a line starting with
  // '#' is skipped; the first whitespace-separated word must be exactly `home`, the next exactly
  // "=", and the value is the rest of the line up to a CR, blanks kept. The first such line wins.
  getpath_c,
  // Python 3.11 and later (getpath.py): the text up to its first NUL, lines split at "\n"; the
  // first line whose part before '=' is `home` after strip().lower() gives its value.strip().
  getpath_py,
};
std::optional<std::string> getpath_home(std::string_view text, HomeReader reader);

// Python 3.11 and later refuse to start with a pyvenv.cfg of this size or more (getpath's
// readlines: "cannot read file larger than 32KB during initialization").
inline constexpr std::size_t k_getpath_max_cfg_bytes = std::size_t{32} * 1024;

// Parses "3.12.3", "3.11.7.final.0", "3.13.0rc1", "3.12": at least major.minor.
std::optional<PythonVersion> parse_python_version(std::string_view text);

struct OpenOptions {
  // The cache directory a read-only prefix keeps its state under (<cache>/prefixes/<key>);
  // empty: $VENVFIX_CACHE_DIR, else $XDG_CACHE_HOME/venvfix, else ~/.cache/venvfix.
  fs::path cache_dir;
};

// Opens the environment at `root`: a venv (a directory holding pyvenv.cfg), else a Python
// prefix (docs/inventory.md). Errors (ExitCode::usage) name the directory or file: not a
// directory, an unreadable or malformed pyvenv.cfg, no way to tell the Python version (neither
// "version"/"version_info" nor a lib/pythonX.Y dir), no site-packages directory, a layout not
// supported yet (said in one sentence).
Result<Venv> open_venv_at(const fs::path& root, const OpenOptions& options = {});

// A symlink below the venv's root on the way to one of its own site-packages directories (say
// lib -> /data/lib), and what it points to; nullopt when there is none. Snapshots record such a
// symlink and do not enter it.
struct SymlinkOnTheWay {
  fs::path link;
  fs::path target;
};
std::optional<SymlinkOnTheWay> own_site_behind_symlink(const Venv& venv);

// The environment of the interpreter at `python` (--python), found without running it: a venv
// when pyvenv.cfg sits beside it or one directory up (as CPython looks), else the prefix that
// holds its standard library, found from the real file a chain of symlinks leads to. A script
// (a pyenv shim) is an ExitCode::usage error that says to name the real interpreter.
Result<Venv> open_python(const fs::path& python, const OpenOptions& options = {});

// Finds the venv: `explicit_path` (--venv), else $VIRTUAL_ENV, else ./.venv; with none of them
// an ExitCode::usage error that says what was tried.
Result<Venv> open_venv(const std::optional<fs::path>& explicit_path,
                       const OpenOptions& options = {});

}  // namespace venvfix::env
