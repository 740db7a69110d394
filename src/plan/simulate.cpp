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
  After(const std::vector<Install>& installs, const std::vector<Keep>& keeps) {
    for (const Install& install : installs) {
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

}  // namespace

std::vector<Failure> simulate(const Context& context, const std::vector<Install>& installs,
                              const std::vector<Keep>& keeps) {
  const verify::Analysis& analysis = context.analysis;
  const fs::path& root = analysis.venv.root;
  After after(installs, keeps);
  std::map<std::string, fs::path> preload = preload_after(context, after);
  std::unordered_map<std::string, fs::path> bound(preload.begin(), preload.end());
  std::map<std::pair<std::string, bool>, Failure> failures;  // (soname, escaped)
  std::deque<const AddedFile*> queue;

  auto fail = [&](const std::string& soname, const std::string& consumer, bool escaped,
                  const fs::path& resolved_to, bool regression, std::optional<std::size_t> cause) {
    Failure& failure = failures[{soname, escaped}];
    failure.soname = soname;
    failure.escaped = escaped;
    failure.needed_by.insert(consumer);
    if (escaped && failure.resolved_to.empty()) failure.resolved_to = resolved_to.string();
    if (regression) {
      failure.regression = true;
      if (!failure.cause) failure.cause = cause;
    }
  };
  auto bind = [&](const std::string& soname, const fs::path& path) {
    bound.emplace(soname, path);
    if (const AddedFile* added = after.added(path)) queue.push_back(added);
  };

  for (const verify::SonameUse& use : analysis.uses) {
    if (context.manifests.system_provider(use.soname)) continue;
    if (!after.exists(use.consumer)) continue;  // the consumer itself goes
    const elf::Resolution& resolution = use.resolution;
    std::optional<fs::path> original;
    if (resolution.path) original = resolution.path->lexically_normal();
    bool was_inside = original && is_inside(*original, root);

    Resolved result;
    if (auto it = preload.find(use.soname); it != preload.end()) {
      result = {Outcome::resolved, it->second};
    } else if (resolution.step == elf::SearchStep::already_loaded && original &&
               after.exists(*original)) {
      result = {Outcome::resolved, *original};
    } else {
      for (const fs::path& searched : resolution.searched) {
        fs::path dir = searched.lexically_normal();
        if (is_inside(dir, root)) {
          fs::path candidate = dir / use.soname;
          if (after.exists(candidate)) {
            result = {Outcome::resolved, candidate};
            break;
          }
        } else if (original && !was_inside && original->parent_path() == dir) {
          result = {Outcome::escaped, *original};
          break;
        }
      }
      if (result.outcome == Outcome::unresolved && original && !was_inside) {
        result = {Outcome::escaped, *original};  // the ld.so.cache or a default directory
      }
    }
    std::string consumer = analysis.display_path(use.consumer) + (use.dlopen ? " (dlopen)" : "");
    if (result.outcome == Outcome::resolved) {
      bind(use.soname, result.path);
      continue;
    }
    std::optional<std::size_t> cause;
    if (was_inside) cause = after.removed_by(*original);
    fail(use.soname, consumer, result.outcome == Outcome::escaped, result.path, was_inside, cause);
  }

  // The libraries the installs bring into the load: their own needs and dlopens.
  std::set<std::string> expanded;
  while (!queue.empty()) {
    const AddedFile* file = queue.front();
    queue.pop_front();
    if (file->library == nullptr || !expanded.insert(file->path.string()).second) continue;
    const manifest::Library& library = *file->library;
    std::vector<fs::path> dirs;
    for (const std::string* list : {&library.rpath, &library.runpath}) {
      for (std::string_view entry : split(*list, ':')) {
        if (entry.empty()) continue;
        std::string expanded_entry =
            replace_all(replace_all(std::string(entry), "${ORIGIN}", "$ORIGIN"), "$ORIGIN",
                        file->path.parent_path().string());
        dirs.push_back(fs::path(expanded_entry).lexically_normal());
      }
    }
    std::string consumer = analysis.display_path(file->path);
    auto need = [&](const std::string& soname, bool dlopen) {
      if (context.manifests.system_provider(soname) || bound.count(soname)) return;
      for (const fs::path& dir : dirs) {
        if (after.exists(dir / soname)) {
          bind(soname, dir / soname);
          return;
        }
      }
      fail(soname, consumer + (dlopen ? " (dlopen)" : ""), false, {}, false, std::nullopt);
    };
    for (const std::string& soname : library.needed) need(soname, false);
    for (const std::string& soname : library.dlopens) need(soname, true);
  }

  std::vector<Failure> out;
  for (auto& [key, failure] : failures) {
    // Loaded by some other object after all (load order is not modelled).
    if (!failure.escaped && bound.count(failure.soname)) continue;
    out.push_back(std::move(failure));
  }
  return out;
}

}  // namespace venvfix::plan::detail
