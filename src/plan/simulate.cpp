// "Do the target sonames resolve after these actions?" Every soname use of the analysis is
// resolved again over the venv as the plan leaves it (files removed, files added), walking the
// directories the loader searched for it, in the same order, with torch's Python-side preload
// recomputed first (what it loads binds by soname before any search). The libraries an install
// brings in are followed too: their DT_NEEDED and the sonames they dlopen (from manifests/),
// through their own DT_RUNPATH/DT_RPATH ($ORIGIN) and what is loaded already.
//
// What this does not model: the needs of files that are not manifest libraries (a reinstalled
// torch file loads what it loaded before), and load order between objects (a soname loaded by
// any object counts as loaded for every other).
#include <algorithm>
#include <deque>
#include <unordered_map>

#include "internal.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/verify/torch_preload.hpp"

namespace venvfix::plan::detail {

namespace {

// The venv as the plan leaves it.
class After {
 public:
  After(const std::vector<Addition>& installs, const std::vector<Keep>& keeps) {
    for (const Addition& install : installs) {
      for (const AddedFile& file : install.files) {
        m_added[file.path.string()] = &file;
        m_added_by_dir[file.path.parent_path()].push_back(file.path.filename().string());
      }
    }
    for (std::size_t i = 0; i < keeps.size(); ++i) {
      for (const fs::path& path : keeps[i].removed) m_removed.emplace(path.string(), i);
    }
  }

  bool exists(const fs::path& path) {
    std::string key = path.string();
    if (m_added.count(key)) return true;
    if (m_removed.count(key)) return false;
    auto [it, fresh] = m_exists.try_emplace(key, false);
    if (fresh) {
      std::error_code error;
      it->second = fs::exists(path, error);
    }
    return it->second;
  }
  const AddedFile* added(const fs::path& path) const {
    auto it = m_added.find(path.string());
    return it == m_added.end() ? nullptr : it->second;
  }
  std::optional<std::size_t> removed_by(const fs::path& path) const {
    auto it = m_removed.find(path.string());
    if (it == m_removed.end()) return std::nullopt;
    return it->second;
  }
  // The names in `dir` after the plan, sorted (glob order, as torch's preload sees it).
  const std::vector<std::string>& listing(const fs::path& dir) {
    auto [it, fresh] = m_listings.try_emplace(dir);
    if (!fresh) return it->second;
    std::vector<std::string>& names = it->second;
    std::error_code error;
    for (fs::directory_iterator entry(dir, error), end; !error && entry != end;
         entry.increment(error)) {
      if (!m_removed.count(entry->path().string())) {
        names.push_back(entry->path().filename().string());
      }
    }
    if (auto added = m_added_by_dir.find(dir); added != m_added_by_dir.end()) {
      names.insert(names.end(), added->second.begin(), added->second.end());
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  }

 private:
  std::unordered_map<std::string, const AddedFile*> m_added;
  std::map<fs::path, std::vector<std::string>> m_added_by_dir;
  std::unordered_map<std::string, std::size_t> m_removed;
  std::unordered_map<std::string, bool> m_exists;
  std::map<fs::path, std::vector<std::string>> m_listings;
};

// torch/__init__.py's preload over the venv after the plan: soname -> file.
std::map<std::string, fs::path> preload_after(const Context& context, After& after) {
  std::map<std::string, fs::path> out;
  for (const fs::path& file : verify::torch_preloads(
           context.analysis, context.manifests, [&](const fs::path& dir) -> const auto& {
             return after.listing(dir.lexically_normal());
           })) {
    fs::path hit = file.lexically_normal();
    const AddedFile* added = after.added(hit);
    out.emplace(added != nullptr ? added->soname : hit.filename().string(), hit);
  }
  return out;
}

enum class Outcome { resolved, escaped, unresolved };

struct Resolved {
  Outcome outcome = Outcome::unresolved;
  fs::path path;
};

// One simulation: the venv's current uses re-resolved in the state after the plan, then the
// needs of every library the installs bring into the load.
class Simulation {
 public:
  Simulation(const Context& context, const std::vector<Addition>& installs,
             const std::vector<Keep>& keeps)
      : m_context(context),
        m_analysis(context.analysis),
        m_root(context.analysis.venv.root),
        m_after(installs, keeps),
        m_preload(preload_after(context, m_after)),
        m_bound(m_preload.begin(), m_preload.end()) {}

  void check_current_uses() {
    for (const verify::SonameUse& use : m_analysis.uses) {
      if (m_context.manifests.system_provider(use.soname)) continue;
      if (!m_after.exists(use.consumer)) continue;  // the consumer itself goes
      std::optional<fs::path> original;
      if (use.resolution.path) original = use.resolution.path->lexically_normal();
      const bool was_inside = original && inside(*original);
      const Resolved result = resolve_after(use, original, was_inside);
      if (result.outcome == Outcome::resolved) {
        bind(use.soname, result.path);
        continue;
      }
      std::string consumer =
          m_analysis.display_path(use.consumer) + (use.dlopen ? " (dlopen)" : "");
      std::optional<std::size_t> cause;
      if (was_inside) cause = m_after.removed_by(*original);
      fail(use.soname, consumer, result.outcome == Outcome::escaped, result.path, was_inside,
           cause);
    }
  }

  // The libraries the installs bring into the load: their own needs and dlopens.
  void check_added_libraries() {
    std::set<std::string> expanded;
    while (!m_queue.empty()) {
      const AddedFile* file = m_queue.front();
      m_queue.pop_front();
      if (file->library == nullptr || !expanded.insert(file->path.string()).second) continue;
      const std::vector<fs::path> dirs = search_dirs(*file);
      const std::string consumer = m_analysis.display_path(file->path);
      for (const std::string& soname : file->library->needed) need(soname, dirs, consumer);
      for (const std::string& soname : file->library->dlopens) {
        need(soname, dirs, consumer + " (dlopen)");
      }
    }
  }

  std::vector<Failure> failures() && {
    std::vector<Failure> out;
    for (auto& [key, failure] : m_failures) {
      // Loaded by some other object after all (load order is not modelled).
      if (!failure.escaped && m_bound.count(failure.soname)) continue;
      out.push_back(std::move(failure));
    }
    return out;
  }

 private:
  // Where `use` resolves once the plan is applied: preloaded, already loaded, the first
  // directory it searched that then holds the soname, or where it went outside the venv.
  Resolved resolve_after(const verify::SonameUse& use, const std::optional<fs::path>& original,
                         bool was_inside) {
    if (auto it = m_preload.find(use.soname); it != m_preload.end()) {
      return {Outcome::resolved, it->second};
    }
    if (use.resolution.step == elf::SearchStep::already_loaded && original &&
        m_after.exists(*original)) {
      return {Outcome::resolved, *original};
    }
    for (const fs::path& searched : use.resolution.searched) {
      fs::path dir = searched.lexically_normal();
      if (inside(dir)) {
        fs::path candidate = dir / use.soname;
        if (m_after.exists(candidate)) return {Outcome::resolved, candidate};
      } else if (original && !was_inside && original->parent_path() == dir) {
        return {Outcome::escaped, *original};
      }
    }
    if (original && !was_inside) return {Outcome::escaped, *original};  // cache or default dir
    return {};
  }

  static std::vector<fs::path> search_dirs(const AddedFile& file) {
    std::vector<fs::path> dirs;
    for (const std::string* list : {&file.library->rpath, &file.library->runpath}) {
      for (std::string_view entry : split(*list, ':')) {
        if (entry.empty()) continue;
        std::string expanded_entry =
            replace_all(replace_all(std::string(entry), "${ORIGIN}", "$ORIGIN"), "$ORIGIN",
                        file.path.parent_path().string());
        dirs.push_back(fs::path(expanded_entry).lexically_normal());
      }
    }
    return dirs;
  }

  void need(const std::string& soname, const std::vector<fs::path>& dirs,
            const std::string& consumer) {
    if (m_context.manifests.system_provider(soname) || m_bound.count(soname)) return;
    for (const fs::path& dir : dirs) {
      if (m_after.exists(dir / soname)) {
        bind(soname, dir / soname);
        return;
      }
    }
    fail(soname, consumer, false, {}, false, std::nullopt);
  }

  void fail(const std::string& soname, const std::string& consumer, bool escaped,
            const fs::path& resolved_to, bool regression, std::optional<std::size_t> cause) {
    Failure& failure = m_failures[{soname, escaped}];
    failure.soname = soname;
    failure.escaped = escaped;
    failure.needed_by.insert(consumer);
    if (escaped && failure.resolved_to.empty()) failure.resolved_to = resolved_to.string();
    if (regression) {
      failure.regression = true;
      if (!failure.cause) failure.cause = cause;
    }
  }

  // Inside the environment: its root or any of its site-packages (a base prefix's too). As
  // verify's inside_environment, whose header is private to verify.
  bool inside(const fs::path& path) const {
    if (is_inside(path, m_root)) return true;
    const auto& sites = m_analysis.venv.site_packages;
    return std::any_of(sites.begin(), sites.end(),
                       [&](const fs::path& site) { return is_inside(path, site); });
  }

  void bind(const std::string& soname, const fs::path& path) {
    m_bound.emplace(soname, path);
    if (const AddedFile* added = m_after.added(path)) m_queue.push_back(added);
  }

  const Context& m_context;
  const verify::Analysis& m_analysis;
  const fs::path& m_root;
  After m_after;
  std::map<std::string, fs::path> m_preload;
  std::unordered_map<std::string, fs::path> m_bound;
  std::map<std::pair<std::string, bool>, Failure> m_failures;  // (soname, escaped)
  std::deque<const AddedFile*> m_queue;
};

}  // namespace

std::vector<Failure> simulate(const Context& context, const std::vector<Addition>& installs,
                              const std::vector<Keep>& keeps) {
  Simulation simulation(context, installs, keeps);
  simulation.check_current_uses();
  simulation.check_added_libraries();
  return std::move(simulation).failures();
}

}  // namespace venvfix::plan::detail
