// Finding and opening a venv: pyvenv.cfg plus the lib/pythonX.Y layout.
#include "venvfix/env/venv.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <system_error>

#include "env/layout.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/log.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::env {

namespace {

constexpr std::size_t k_max_cfg_bytes = 1u << 20;

using detail::is_dir_stat;
using detail::lib_dir_rank;
using detail::LibDir;

Status require_directory(const fs::path& root) {
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) {
    return make_error(ExitCode::usage, "{} is not a virtual environment: {}", root.string(),
                      errno_message(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return make_error(ExitCode::usage, "{} is not a virtual environment: not a directory",
                      root.string());
  }
  return ok();
}

Result<PyvenvCfg> read_pyvenv_cfg(const fs::path& root) {
  const fs::path cfg_path = root / "pyvenv.cfg";
  struct stat cfg_stat {};
  if (::stat(cfg_path.c_str(), &cfg_stat) != 0) {
    if (errno == ENOENT) {
      return make_error(ExitCode::usage, "{} is not a virtual environment: it has no pyvenv.cfg",
                        root.string());
    }
    return make_error(ExitCode::usage, "cannot read {}: {}", cfg_path.string(),
                      errno_message(errno));
  }
  auto text = read_file(cfg_path, k_max_cfg_bytes);
  if (!text) {
    return make_error(ExitCode::usage, "cannot read {}: {}", cfg_path.string(),
                      text.error().message);
  }
  return parse_pyvenv_cfg(*text, cfg_path.string());
}

// venv writes "version", virtualenv and uv write "version_info" ("3.11.7.final.0", "3.12.3").
std::optional<PythonVersion> configured_version(const PyvenvCfg& cfg, const fs::path& cfg_path) {
  for (const char* key : {"version", "version_info"}) {
    if (auto value = cfg.get(key)) {
      if (auto version = parse_python_version(*value)) return version;
      spdlog::debug("{}: ignoring unparsable {} = {}", cfg_path.string(), key,
                    printable_excerpt(*value));
    }
  }
  return std::nullopt;
}

// The lib/pythonX.Y directory of the configured version.
Result<LibDir> lib_dir_for(const std::vector<LibDir>& lib_dirs, const PythonVersion& version,
                           const fs::path& root) {
  std::optional<LibDir> chosen;
  for (const LibDir& dir : lib_dirs) {
    if (dir.major != version.major || dir.minor != version.minor) continue;
    if (!chosen || lib_dir_rank(dir) < lib_dir_rank(*chosen)) chosen = dir;
  }
  if (chosen) return *chosen;
  return make_error(ExitCode::usage,
                    "{}: no site-packages for Python {}.{} (pyvenv.cfg says {}, but there is no "
                    "lib/python{}.{} directory)",
                    root.string(), version.major, version.minor, version.full, version.major,
                    version.minor);
}

// Without a configured version: the one Python version lib/ holds.
Result<LibDir> only_lib_dir(const std::vector<LibDir>& lib_dirs, const fs::path& root) {
  const fs::path cfg_path = root / "pyvenv.cfg";
  std::optional<LibDir> chosen;
  std::vector<std::string> names;
  for (const LibDir& dir : lib_dirs) {
    bool same = chosen && chosen->major == dir.major && chosen->minor == dir.minor;
    if (!chosen || (same && lib_dir_rank(dir) < lib_dir_rank(*chosen))) chosen = dir;
    if (!same) names.push_back(dir.name);
  }
  if (!chosen) {
    return make_error(ExitCode::usage,
                      "cannot tell the Python version of {}: {} has no valid \"version\" or "
                      "\"version_info\" and there is no lib/pythonX.Y directory",
                      root.string(), cfg_path.string());
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  if (names.size() > 1) {
    return make_error(ExitCode::usage,
                      "cannot tell the Python version of {}: {} has no valid \"version\" and "
                      "lib/ holds several ({})",
                      root.string(), cfg_path.string(), join(names, ", "));
  }
  return *chosen;
}

// sys.path order as documented in the header; lib64 is dropped when it is the same directory
// (the symlink python -m venv makes on 64-bit Linux).
Status find_site_packages(Venv& venv) {
  struct stat lib_stat {};
  const fs::path lib_site = venv.root / "lib" / venv.lib_dir_name / "site-packages";
  const fs::path lib64_site = venv.root / "lib64" / venv.lib_dir_name / "site-packages";
  bool have_lib = is_dir_stat(lib_site, &lib_stat);
  if (have_lib) venv.site_packages.push_back(lib_site);
  struct stat lib64_stat {};
  bool have_lib64 = is_dir_stat(lib64_site, &lib64_stat);
  if (have_lib64 && have_lib && lib64_stat.st_dev == lib_stat.st_dev &&
      lib64_stat.st_ino == lib_stat.st_ino) {
    have_lib64 = false;
  }
  if (have_lib64) venv.site_packages.push_back(lib64_site);
  if (venv.site_packages.empty()) {
    return make_error(ExitCode::usage, "{}: no site-packages directory (looked for {} and {})",
                      venv.root.string(), lib_site.string(), lib64_site.string());
  }
  venv.purelib = have_lib ? lib_site : lib64_site;
  venv.platlib = have_lib64 ? lib64_site : venv.purelib;
  return ok();
}

// CPython 3.8-3.10 find their base with getpath.c; 3.11 and later (and PyPy, read the same way)
// with getpath.py.
bool reads_home_as_getpath_c(const Venv& venv) {
  return venv.implementation == "cpython" &&
         (venv.python.major < 3 || (venv.python.major == 3 && venv.python.minor < 11));
}

// include-system-site-packages = true: the base prefix's site-packages follow the venv's own, as
// site.py adds them. getpath finds the base by searching up from `home`; without a home, or when
// that search finds no standard library, the interpreter falls back to the prefix it was built
// for, which for a venv of symlinks is where bin/python3 leads. (A venv of copies whose home
// leads nowhere runs on that built-in prefix, which venvfix cannot read: it warns.)
void add_base_layer(Venv& venv) {
  if (!venv.include_system_site_packages) return;
  fs::path stdlib;
  fs::path as_written;  // the prefix found from `home`, dot segments and all
  if (!venv.home.empty()) {
    const auto join = reads_home_as_getpath_c(venv) ? detail::LandmarkJoin::as_written
                                                    : detail::LandmarkJoin::normalised;
    as_written = detail::search_up_for_prefix(venv.home.native(), venv.lib_dir_name, join);
    if (!as_written.empty()) {
      stdlib = detail::normalised_absolute(as_written) / "lib" / venv.lib_dir_name;
    }
  }
  if (stdlib.empty()) stdlib = detail::find_stdlib(venv.root, venv.lib_dir_name);
  if (stdlib.empty()) {
    spdlog::warn(
        "{}: include-system-site-packages is true, but neither its home ({}) nor bin/python3's "
        "target leads to a lib/{}/os.py: the base prefix's site-packages are not read",
        venv.root.string(), venv.home.empty() ? "none" : venv.home.string(), venv.lib_dir_name);
    return;
  }
  venv.base_prefix = stdlib.parent_path().parent_path();
  detail::add_prefix_site_packages(venv, venv.base_prefix, stdlib, Layer::base, as_written);
}

// The venv's interpreter as its user runs it: the first of detail::interpreter_names that exists.
std::optional<struct stat> interpreter_lstat(const Venv& venv) {
  for (const std::string& name : detail::interpreter_names(venv.lib_dir_name)) {
    struct stat st {};
    if (::lstat((venv.root / "bin" / name).c_str(), &st) == 0) return st;
  }
  return std::nullopt;
}

// The `home` the venv's getpath reads. CPython 3.8-3.10 follow a symlinked interpreter to the
// base before they look for pyvenv.cfg, so they read no home from a venv of symlinks; 3.11 and
// later read it always, and refuse to start on a pyvenv.cfg of 32 KiB or more.
Status read_home(Venv& venv, const PyvenvCfg& cfg) {
  const bool getpath_c = reads_home_as_getpath_c(venv);
  if (venv.implementation == "cpython" && !getpath_c &&
      cfg.text.size() >= k_getpath_max_cfg_bytes) {
    return make_error(ExitCode::usage,
                      "{} is {} bytes: Python {}.{} refuses to start with a pyvenv.cfg of 32 KiB "
                      "or more",
                      (venv.root / "pyvenv.cfg").string(), cfg.text.size(), venv.python.major,
                      venv.python.minor);
  }
  if (getpath_c) {
    const auto interpreter = interpreter_lstat(venv);
    if (interpreter && S_ISLNK(interpreter->st_mode)) return ok();
  }
  const HomeReader reader = getpath_c ? HomeReader::getpath_c : HomeReader::getpath_py;
  if (auto home = getpath_home(cfg.text, reader)) venv.home = fs::path(*home);
  return ok();
}

// The Python version and lib/pythonX.Y directory of a venv, from pyvenv.cfg or the layout.
Status choose_version(Venv& venv, const PyvenvCfg& cfg) {
  std::optional<PythonVersion> version = configured_version(cfg, venv.root / "pyvenv.cfg");
  const std::vector<LibDir> lib_dirs = detail::find_lib_dirs(venv.root);
  LibDir chosen;
  if (version) {
    VENVFIX_TRY_ASSIGN(chosen, lib_dir_for(lib_dirs, *version, venv.root));
  } else {
    VENVFIX_TRY_ASSIGN(chosen, only_lib_dir(lib_dirs, venv.root));
    version = PythonVersion{chosen.major, chosen.minor, 0,
                            fmt::format("{}.{}", chosen.major, chosen.minor)};
  }
  venv.python = *version;
  venv.lib_dir_name = chosen.name;
  if (auto implementation = cfg.get("implementation"); implementation && !implementation->empty()) {
    venv.implementation = to_lower_ascii(*implementation);
  } else {
    venv.implementation = chosen.pypy ? "pypy" : "cpython";
  }
  return ok();
}

bool has_no_pyvenv_cfg(const fs::path& root) {
  struct stat st {};
  return ::lstat((root / "pyvenv.cfg").c_str(), &st) != 0 && errno == ENOENT;
}

}  // namespace

Result<Venv> open_venv_at(const fs::path& given, const OpenOptions& options) {
  Venv venv;
  venv.root = detail::normalised_absolute(given);
  VENVFIX_TRY(require_directory(venv.root));
  if (has_no_pyvenv_cfg(venv.root)) return detail::open_prefix_at(venv.root, options);
  VENVFIX_TRY_ASSIGN(PyvenvCfg cfg, read_pyvenv_cfg(venv.root));
  VENVFIX_TRY(choose_version(venv, cfg));
  VENVFIX_TRY(find_site_packages(venv));
  venv.site_layers.assign(venv.site_packages.size(), Layer::own);
  // site.py: the last line wins, and a venv without the line sees the base's site-packages.
  venv.include_system_site_packages =
      to_lower_ascii(cfg.last("include-system-site-packages").value_or("true")) == "true";
  VENVFIX_TRY(read_home(venv, cfg));
  add_base_layer(venv);
  return venv;
}

Result<Venv> open_venv(const std::optional<fs::path>& explicit_path, const OpenOptions& options) {
  if (explicit_path) return open_venv_at(*explicit_path, options);
  if (const char* virtual_env = std::getenv("VIRTUAL_ENV");
      virtual_env != nullptr && *virtual_env != '\0') {
    auto venv = open_venv_at(virtual_env, options);
    if (!venv) return with_context(std::move(venv).error(), "$VIRTUAL_ENV");
    return venv;
  }
  std::error_code ec;
  fs::path local = fs::current_path(ec) / ".venv";
  if (!ec && fs::exists(local, ec)) return open_venv_at(local, options);
  return make_error(ExitCode::usage,
                    "no virtual environment: --venv was not given, $VIRTUAL_ENV is not set and "
                    "{} does not exist",
                    ec ? std::string("./.venv") : local.string());
}

std::optional<SymlinkOnTheWay> own_site_behind_symlink(const Venv& venv) {
  for (std::size_t i = 0; i < venv.site_packages.size(); ++i) {
    if (i < venv.site_layers.size() && venv.site_layers[i] != Layer::own) continue;
    const fs::path relative =
        venv.site_packages[i].lexically_normal().lexically_relative(venv.root);
    if (relative.empty() || *relative.begin() == "..") continue;
    fs::path at = venv.root;
    for (const fs::path& component : relative) {
      at /= component;
      std::error_code error;
      if (fs::is_symlink(fs::symlink_status(at, error)) && !error) {
        return SymlinkOnTheWay{at, fs::read_symlink(at, error)};
      }
    }
  }
  return std::nullopt;
}

}  // namespace venvfix::env
