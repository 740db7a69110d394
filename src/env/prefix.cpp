// A Python prefix without pyvenv.cfg (/usr/local, a pyenv version, a `pip install --prefix`
// tree), its site-packages as its interpreter's site.py lays them out, and --python.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <system_error>

#include "env/layout.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/log.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::env::detail {

namespace {

constexpr std::size_t k_max_site_py_bytes = 4u << 20;
constexpr int k_max_link_hops = 16;

bool is_regular(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Debian and Ubuntu patch site.getsitepackages() to list dist-packages directories (and
// sysconfig's posix_local scheme, where their pip installs): the patched site.py says so.
bool is_debian_site(const fs::path& stdlib) {
  if (stdlib.empty()) return false;
  auto text = read_file(stdlib / "site.py", k_max_site_py_bytes);
  return text && text->find("\"dist-packages\"") != std::string::npos;
}

struct SiteCandidate {
  fs::path path;
  bool system = false;  // installed by the system package manager (apt), not pip
};

// Debian's site.py (3.11, 3.12): prefix/local/lib/pythonX.Y/dist-packages (pip's posix_local),
// prefix/lib/python3/dist-packages (apt), then prefix/<platlibdir>/pythonX.Y/dist-packages.
// Elsewhere CPython's: prefix/lib/pythonX.Y/site-packages, then a distinct lib64 one.
std::vector<SiteCandidate> site_candidates(const fs::path& prefix, const std::string& lib,
                                           bool debian) {
  if (debian) {
    return {{prefix / "local" / "lib" / lib / "dist-packages", false},
            {prefix / "lib" / "python3" / "dist-packages", true},
            {prefix / "lib" / lib / "dist-packages", true}};
  }
  return {{prefix / "lib" / lib / "site-packages", false},
          {prefix / "lib64" / lib / "site-packages", false}};
}

bool same_directory(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

bool already_listed(const Venv& env, const struct stat& st) {
  return std::any_of(env.site_packages.begin(), env.site_packages.end(), [&](const fs::path& p) {
    struct stat other {};
    return is_dir_stat(p, &other) && same_directory(other, st);
  });
}

// The lib/pythonX.Y name an interpreter's file name or its symlinks' names carry
// ("bin/python3" -> "python3.12" -> "/opt/py/bin/python3.12"), or nullopt.
std::optional<LibDir> interpreter_lib_dir(const fs::path& bin_dir) {
  for (const char* name : {"python3", "python"}) {
    fs::path link = bin_dir / name;
    for (int hop = 0; hop < k_max_link_hops; ++hop) {
      if (auto parsed = parse_lib_dir_name(link.filename().string())) return parsed;
      std::error_code ec;
      fs::path target = fs::read_symlink(link, ec);
      if (ec) break;
      link = target.is_absolute() ? target : link.parent_path() / target;
    }
  }
  return std::nullopt;
}

// The lib/pythonX.Y of a prefix: the one its bin/python3 names, else the only version lib/
// holds. Errors name the prefix.
Result<LibDir> choose_prefix_lib_dir(const fs::path& root) {
  const std::vector<LibDir> lib_dirs = find_lib_dirs(root);
  std::optional<LibDir> wanted = interpreter_lib_dir(root / "bin");
  std::optional<LibDir> chosen;
  std::vector<std::string> versions;
  for (const LibDir& dir : lib_dirs) {
    if (dir.name == "python3") continue;  // Debian's version-independent lib/python3
    if (wanted && (dir.major != wanted->major || dir.minor != wanted->minor)) continue;
    std::string version = fmt::format("{}.{}", dir.major, dir.minor);
    if (std::find(versions.begin(), versions.end(), version) == versions.end()) {
      versions.push_back(version);
    }
    if (!chosen || lib_dir_rank(dir) < lib_dir_rank(*chosen)) chosen = dir;
  }
  if (!chosen) {
    return make_error(ExitCode::usage,
                      "{} is not a Python environment: it has no pyvenv.cfg and no "
                      "lib/pythonX.Y directory",
                      root.string());
  }
  if (versions.size() > 1) {
    return make_error(ExitCode::usage,
                      "cannot tell which Python of {} to use: it has no pyvenv.cfg, no "
                      "bin/python3 naming a version, and lib/ holds several ({}); give the "
                      "interpreter with --python",
                      root.string(), join(versions, ", "));
  }
  return *chosen;
}

}  // namespace

std::array<std::string, 3> interpreter_names(const std::string& lib_dir_name) {
  return {"python3", "python", lib_dir_name};
}

fs::path find_stdlib(const fs::path& prefix, const std::string& lib_dir_name) {
  if (is_regular(prefix / "lib" / lib_dir_name / "os.py")) return prefix / "lib" / lib_dir_name;
  for (const std::string& name : interpreter_names(lib_dir_name)) {
    std::error_code ec;
    fs::path real = fs::canonical(prefix / "bin" / name, ec);
    if (ec) continue;
    fs::path stdlib = real.parent_path().parent_path() / "lib" / lib_dir_name;
    if (is_regular(stdlib / "os.py")) return stdlib;
  }
  return {};
}

fs::path search_up_for_prefix(std::string_view home, const std::string& lib_dir_name,
                              LandmarkJoin join) {
  std::string dir(home);
  while (!dir.empty()) {
    const fs::path stdlib = fs::path(dir) / "lib" / lib_dir_name;
    for (const char* landmark : {"os.py", "os.pyc"}) {
      const fs::path path = stdlib / landmark;
      if (is_regular(join == LandmarkJoin::normalised ? path.lexically_normal() : path)) {
        return dir;
      }
    }
    const std::size_t slash = dir.rfind('/');
    dir.resize(slash == std::string::npos ? 0 : slash);
  }
  return {};
}

void add_prefix_site_packages(Venv& env, const fs::path& prefix, const fs::path& stdlib,
                              Layer layer, const fs::path& as_written) {
  const bool debian = is_debian_site(stdlib);
  const std::size_t first = env.site_packages.size();
  const fs::path& checked_prefix = as_written.empty() ? prefix : as_written;
  for (const SiteCandidate& candidate : site_candidates(prefix, env.lib_dir_name, debian)) {
    struct stat st {};
    const fs::path checked = checked_prefix / candidate.path.lexically_relative(prefix);
    if (!is_dir_stat(checked, &st) || already_listed(env, st)) continue;
    env.site_packages.push_back(candidate.path);
    env.site_layers.resize(env.site_packages.size() - 1, Layer::own);
    env.site_layers.push_back(layer);
    if (candidate.system) env.system_site_packages.push_back(candidate.path);
  }
  if (layer != Layer::own || env.site_packages.size() == first) return;
  // pip writes where the first non-system directory is (Debian: local/…/dist-packages).
  env.purelib = env.site_packages[first];
  for (std::size_t i = first; i < env.site_packages.size(); ++i) {
    if (!env.is_system_site(env.site_packages[i])) {
      env.purelib = env.site_packages[i];
      break;
    }
  }
  env.platlib = env.purelib;
  if (!debian && env.site_packages.size() > first + 1) env.platlib = env.site_packages.back();
}

Result<Venv> open_prefix_at(const fs::path& root, const OpenOptions& options) {
  Venv env;
  env.root = root;
  env.kind = EnvKind::prefix;
  VENVFIX_TRY_ASSIGN(LibDir lib, choose_prefix_lib_dir(root));
  env.lib_dir_name = lib.name;
  env.python = PythonVersion{lib.major, lib.minor, 0, fmt::format("{}.{}", lib.major, lib.minor)};
  env.implementation = lib.pypy ? "pypy" : "cpython";
  const fs::path stdlib = find_stdlib(root, lib.name);
  add_prefix_site_packages(env, root, stdlib, Layer::own);
  if (env.site_packages.empty()) {
    if (stdlib.empty() && is_dir_stat(root / "lib" / lib.name / "dist-packages")) {
      return make_error(ExitCode::usage,
                        "{} is not supported yet: its lib/{}/dist-packages belongs to an "
                        "interpreter elsewhere (Debian puts /usr/local's there for /usr/bin/"
                        "python3); give that interpreter with --python",
                        root.string(), lib.name);
    }
    return make_error(ExitCode::usage, "{}: no site-packages directory (looked for {})",
                      root.string(), (root / "lib" / lib.name / "site-packages").string());
  }
  place_prefix_state(env, options);
  return env;
}

namespace {

fs::path default_cache_dir() {
  for (const char* name : {"VENVFIX_CACHE_DIR"}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return value;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return fs::path(xdg) / "venvfix";
  }
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr && *home != '\0' ? home : "/tmp") / ".cache" / "venvfix";
}

}  // namespace

void place_prefix_state(Venv& env, const OpenOptions& options) {
  if (::access(env.root.c_str(), W_OK) == 0) return;  // <root>/.venvfix, as for a venv
  const fs::path cache = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  Sha256Digest digest = sha256(env.root.string());
  std::string name = env.root.filename().string();
  if (name.empty()) name = "root";
  env.state =
      cache / "prefixes" / (name + "-" + to_hex(std::span<const std::uint8_t>(digest.data(), 8)));
  // The state directory itself is made by whoever writes first (lock, journal, hash cache), one
  // level deep as under a venv: its parent is venvfix's own cache.
  std::error_code ec;
  fs::create_directories(env.state.parent_path(), ec);
  if (ec) spdlog::debug("cannot create {}: {}", env.state.parent_path().string(), ec.message());
  spdlog::warn(
      "{} is not writable: venvfix keeps its locks, journals, snapshots and hash cache "
      "for it in {}",
      env.root.string(), env.state.string());
}

}  // namespace venvfix::env::detail

namespace venvfix::env {

namespace {

bool is_elf(const fs::path& path) {
  auto fd = open_file(path, O_RDONLY | O_CLOEXEC);
  if (!fd) return false;
  char magic[4] = {};
  return ::read(fd->get(), magic, sizeof magic) == 4 && magic[0] == '\x7f' && magic[1] == 'E' &&
         magic[2] == 'L' && magic[3] == 'F';
}

// CPython's getpath: the prefix is the first directory, going up from the real executable's,
// that holds lib/pythonX.Y/os.py.
std::optional<fs::path> landmark_prefix(const fs::path& real) {
  std::optional<detail::LibDir> wanted = detail::parse_lib_dir_name(real.filename().string());
  for (fs::path dir = real.parent_path(); dir.has_relative_path(); dir = dir.parent_path()) {
    for (const detail::LibDir& lib : detail::find_lib_dirs(dir)) {
      if (wanted && lib.name != wanted->name) continue;
      if (detail::is_regular(dir / "lib" / lib.name / "os.py")) return dir;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<Venv> open_python(const fs::path& python, const OpenOptions& options) {
  const fs::path given = detail::normalised_absolute(python);
  if (!detail::is_regular(given)) {
    return make_error(ExitCode::usage, "--python {}: no such interpreter", given.string());
  }
  // CPython looks for pyvenv.cfg beside the executable and one directory up, symlinks kept.
  for (const fs::path& dir : {given.parent_path(), given.parent_path().parent_path()}) {
    struct stat st {};
    if (::stat((dir / "pyvenv.cfg").c_str(), &st) == 0) return open_venv_at(dir, options);
  }
  std::error_code ec;
  const fs::path real = fs::canonical(given, ec);
  if (ec || !is_elf(real)) {
    return make_error(ExitCode::usage,
                      "cannot tell the environment of {} without running it: {} is a script, not "
                      "an interpreter (a pyenv shim?); give the real one (`pyenv which python3`) "
                      "or --venv PREFIX",
                      given.string(), ec ? given.string() : real.string());
  }
  std::optional<fs::path> prefix = landmark_prefix(real);
  if (!prefix) {
    return make_error(ExitCode::usage,
                      "cannot find the standard library of {}: no lib/pythonX.Y/os.py above {}",
                      given.string(), real.string());
  }
  return open_venv_at(*prefix, options);
}

}  // namespace venvfix::env
