#include "venvfix/apply/removal.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <optional>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::apply {

std::string venv_relative(const env::Venv& venv, const fs::path& path) {
  fs::path normal = path.lexically_normal();
  fs::path rel = normal.lexically_relative(venv.root);
  if (rel.empty() || rel == "." || *rel.begin() == ".." || *rel.begin() == ".venvfix") return {};
  return rel.generic_string();
}

namespace {

bool is_file_or_symlink(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return false;
  return S_ISREG(st.st_mode) || S_ISLNK(st.st_mode);
}

// The script names of entry_points.txt's console_scripts and gui_scripts sections (as
// importlib.metadata reads it: `[section]`, `name = value`, `#`/`;` comments).
std::vector<std::string> entry_point_scripts(const fs::path& dist_info) {
  std::vector<std::string> names;
  auto text = read_file(dist_info / "entry_points.txt", 16u << 20);
  if (!text) return names;
  bool wanted = false;
  for (std::string_view line : split(*text, '\n')) {
    line = trim(line);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[') {
      wanted = line == "[console_scripts]" || line == "[gui_scripts]";
      continue;
    }
    if (!wanted) continue;
    auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = trim(line.substr(0, eq));
    // A script name is a file name in bin/: nothing that could point elsewhere.
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos ||
        name.find('\0') != std::string_view::npos) {
      continue;
    }
    names.emplace_back(name);
  }
  return names;
}

// `__pycache__/<stem>.<tag>.pyc` and `.<tag>.opt-N.pyc` (any interpreter tag: the venv may have
// been used by several).
bool is_cache_of(std::string_view file, std::string_view stem) {
  if (!file.starts_with(stem) || file.size() <= stem.size() + 5 || file[stem.size()] != '.' ||
      !file.ends_with(".pyc")) {
    return false;
  }
  std::string_view middle = file.substr(stem.size() + 1, file.size() - stem.size() - 5);
  if (auto opt = middle.find(".opt-"); opt != std::string_view::npos) {
    std::string_view level = middle.substr(opt + 5);
    if (level.empty() ||
        !std::all_of(level.begin(), level.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
    middle = middle.substr(0, opt);
  }
  return !middle.empty() && middle.find('.') == std::string_view::npos;
}

class RemovalBuilder {
 public:
  RemovalBuilder(const env::Venv& venv, const dist::Inventory& inventory,
                 const std::set<std::size_t>& leaving, Removal& out)
      : m_venv(venv), m_inventory(inventory), m_leaving(leaving), m_out(out) {
    std::error_code error;
    m_real_root = fs::canonical(venv.root, error);
    if (error) m_real_root = venv.root;
  }

  // `path`: absolute. `owner_path`: the path whose RECORD owners decide keeping (a .pyc is
  // kept exactly when its .py is).
  void add(const fs::path& path, const fs::path& owner_path) {
    fs::path normal = path.lexically_normal();
    std::string rel = venv_relative(m_venv, normal);
    if (rel.empty()) {
      m_out.refused.push_back(normal.string());
      return;
    }
    if (!is_file_or_symlink(normal)) return;
    // The parent directory as the kernel resolves it: a symlinked directory may not lead out.
    std::error_code error;
    fs::path real_parent = fs::canonical(normal.parent_path(), error);
    if (error) return;
    fs::path real_rel = (real_parent / normal.filename()).lexically_relative(m_real_root);
    if (real_rel.empty() || *real_rel.begin() == ".." || *real_rel.begin() == ".venvfix") {
      m_out.refused.push_back(normal.string());
      return;
    }
    std::string key = real_rel.generic_string();
    if (kept_for_others(owner_path) || kept_for_others(m_venv.root / real_rel)) {
      m_kept.insert(key);
    } else {
      m_remove.insert(key);
    }
  }

  void finish() {
    for (const std::string& kept : m_kept) m_remove.erase(kept);
    m_out.remove.assign(m_remove.begin(), m_remove.end());
    m_out.kept.assign(m_kept.begin(), m_kept.end());
    std::sort(m_out.refused.begin(), m_out.refused.end());
    m_out.refused.erase(std::unique(m_out.refused.begin(), m_out.refused.end()),
                        m_out.refused.end());
  }

  // The names in `dir` (cached; empty when it is not a directory).
  const std::vector<std::string>& listing(const fs::path& dir) {
    auto [it, inserted] = m_listings.try_emplace(dir.string());
    if (inserted) {
      std::error_code error;
      for (fs::directory_iterator entry(dir, error), end; !error && entry != end;
           entry.increment(error)) {
        it->second.push_back(entry->path().filename().string());
      }
    }
    return it->second;
  }

 private:
  bool kept_for_others(const fs::path& path) const {
    for (std::size_t owner : m_inventory.owners_of(path)) {
      if (m_leaving.count(owner) == 0) return true;
    }
    return false;
  }

  const env::Venv& m_venv;
  const dist::Inventory& m_inventory;
  const std::set<std::size_t>& m_leaving;
  Removal& m_out;
  fs::path m_real_root;
  std::set<std::string> m_remove;
  std::set<std::string> m_kept;
  std::map<std::string, std::vector<std::string>> m_listings;
};

}  // namespace

Removal plan_removal(const env::Venv& venv, const dist::Inventory& inventory, std::size_t index,
                     const std::set<std::size_t>& leaving) {
  const dist::Distribution& dist = inventory.distributions.at(index);
  Removal out;
  out.dist = dist.name;
  out.version = dist.version;
  RemovalBuilder builder(venv, inventory, leaving, out);

  for (const dist::RecordEntry& entry : dist.record) {
    fs::path path(dist::resolve_record_path(dist.site_packages, entry.path));
    builder.add(path, path);
    if (path.extension() != ".py") continue;
    const std::string stem = path.stem().string();
    const fs::path dir = path.parent_path();
    builder.add(dir / (stem + ".pyc"), path);
    builder.add(dir / (stem + ".pyo"), path);
    for (const std::string& name : builder.listing(dir / "__pycache__")) {
      if (is_cache_of(name, stem)) builder.add(dir / "__pycache__" / name, path);
    }
  }

  // Every file of the metadata directory, listed or not.
  std::error_code error;
  if (fs::is_directory(fs::symlink_status(dist.metadata_dir, error))) {
    for (fs::recursive_directory_iterator it(dist.metadata_dir, error), end; !error && it != end;
         it.increment(error)) {
      if (!it->is_directory(error) || it->is_symlink(error)) builder.add(it->path(), it->path());
    }
  } else {
    builder.add(dist.metadata_dir, dist.metadata_dir);
  }

  for (const std::string& script : entry_point_scripts(dist.metadata_dir)) {
    builder.add(venv.root / "bin" / script, venv.root / "bin" / script);
  }
  builder.finish();
  return out;
}

}  // namespace venvfix::apply
