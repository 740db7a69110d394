// The lib/pythonX.Y directories of a venv or prefix, and the small Venv accessors.
#include <algorithm>
#include <system_error>

#include "env/layout.hpp"

namespace venvfix::env {

std::string_view to_string(Layer layer) {
  return layer == Layer::base ? "base" : "own";
}

Layer Venv::layer_of(const fs::path& site) const {
  for (std::size_t i = 0; i < site_packages.size() && i < site_layers.size(); ++i) {
    if (site_packages[i] == site) return site_layers[i];
  }
  return Layer::own;
}

bool Venv::is_system_site(const fs::path& site) const {
  return std::find(system_site_packages.begin(), system_site_packages.end(), site) !=
         system_site_packages.end();
}

namespace detail {

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

bool is_dir_stat(const fs::path& path, struct stat* out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  if (out != nullptr) *out = st;
  return true;
}

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

int lib_dir_rank(const LibDir& dir) {
  if (dir.pypy) return 2;
  return dir.name.back() == 't' ? 1 : 0;
}

}  // namespace detail
}  // namespace venvfix::env
