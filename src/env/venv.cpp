// Finding and opening a venv: pyvenv.cfg plus the lib/pythonX.Y layout.
#include "venvfix/env/venv.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <system_error>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/log.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::env {

namespace {

constexpr std::size_t k_max_cfg_bytes = 1u << 20;

fs::path normalised_absolute(const fs::path& path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) absolute = path;
  absolute = absolute.lexically_normal();
  if (!absolute.has_filename() && absolute.has_parent_path() && absolute != absolute.root_path()) {
    absolute = absolute.parent_path();  // "/a/b/" -> "/a/b"
  }
  return absolute;
}

bool is_dir_stat(const fs::path& path, struct stat* out = nullptr) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  if (out != nullptr) *out = st;
  return true;
}

// A directory under lib/ or lib64/ that holds a Python's library: "python3.12", "python3.13t",
// "pypy3.10".
struct LibDir {
  std::string name;
  int major = 0;
  int minor = 0;
  bool pypy = false;
};

std::optional<LibDir> parse_lib_dir_name(std::string_view name) {
  LibDir dir;
  dir.name = std::string(name);
  std::string_view rest = name;
  if (rest.starts_with("python")) {
    rest.remove_prefix(6);
  } else if (rest.starts_with("pypy")) {
    rest.remove_prefix(4);
    dir.pypy = true;
  } else {
    return std::nullopt;
  }
  if (!rest.empty() && rest.back() == 't') rest.remove_suffix(1);  // free-threaded build
  auto version = parse_python_version(rest);
  if (!version || version->full.find_first_not_of("0123456789.") != std::string::npos ||
      std::count(rest.begin(), rest.end(), '.') != 1) {
    return std::nullopt;
  }
  dir.major = version->major;
  dir.minor = version->minor;
  return dir;
}

std::vector<LibDir> find_lib_dirs(const fs::path& root) {
  std::vector<LibDir> found;
  for (const char* lib : {"lib", "lib64"}) {
    std::error_code ec;
    for (fs::directory_iterator it(root / lib, ec), end; !ec && it != end; it.increment(ec)) {
      auto parsed = parse_lib_dir_name(it->path().filename().string());
      if (!parsed || !is_dir_stat(it->path())) continue;
      bool seen = std::any_of(found.begin(), found.end(),
                              [&](const LibDir& d) { return d.name == parsed->name; });
      if (!seen) found.push_back(std::move(*parsed));
    }
  }
  std::sort(found.begin(), found.end(),
            [](const LibDir& a, const LibDir& b) { return a.name < b.name; });
  return found;
}

// Orders candidates for the wanted version: "pythonX.Y" before "pythonX.Yt" before pypy.
int lib_dir_rank(const LibDir& dir) {
  if (dir.pypy) return 2;
  return dir.name.back() == 't' ? 1 : 0;
}

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

}  // namespace

Result<Venv> open_venv_at(const fs::path& given) {
  Venv venv;
  venv.root = normalised_absolute(given);
  VENVFIX_TRY(require_directory(venv.root));
  VENVFIX_TRY_ASSIGN(PyvenvCfg cfg, read_pyvenv_cfg(venv.root));
  std::optional<PythonVersion> version = configured_version(cfg, venv.root / "pyvenv.cfg");
  const std::vector<LibDir> lib_dirs = find_lib_dirs(venv.root);
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
  VENVFIX_TRY(find_site_packages(venv));
  if (auto value = cfg.get("include-system-site-packages")) {
    venv.include_system_site_packages = to_lower_ascii(*value) == "true";
  }
  if (auto home = cfg.get("home")) venv.home = fs::path(*home);
  return venv;
}

Result<Venv> open_venv(const std::optional<fs::path>& explicit_path) {
  if (explicit_path) return open_venv_at(*explicit_path);
  if (const char* virtual_env = std::getenv("VIRTUAL_ENV");
      virtual_env != nullptr && *virtual_env != '\0') {
    auto venv = open_venv_at(virtual_env);
    if (!venv) return with_context(std::move(venv).error(), "$VIRTUAL_ENV");
    return venv;
  }
  std::error_code ec;
  fs::path local = fs::current_path(ec) / ".venv";
  if (!ec && fs::exists(local, ec)) return open_venv_at(local);
  return make_error(ExitCode::usage,
                    "no virtual environment: --venv was not given, $VIRTUAL_ENV is not set and "
                    "{} does not exist",
                    ec ? std::string("./.venv") : local.string());
}

}  // namespace venvfix::env
