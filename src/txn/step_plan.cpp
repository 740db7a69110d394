#include "txn/step_plan.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include <spdlog/spdlog.h>

#include "txn/paths.hpp"
#include "venvfix/base/dir_entries.hpp"

namespace venvfix::txn {

namespace {

// What plan_steps has decided so far.
struct StepPlan {
  const fs::path& root;
  int rootfd;
  const std::string& staging;
  std::set<std::string> add;
  std::set<std::string> remove;
  std::set<std::string> made;           // directories a make_dir step creates
  std::set<std::string> present;        // directories found there: checked once, not per file
  std::set<std::string> add_ancestors;  // directories something is added under: never pruned
  std::vector<Step> steps;
};

Result<std::string> normalise(const std::string& path, std::string_view list) {
  // A safe relative path (no empty, "." or ".." component) is its own normal form: the
  // rollback of a changed distribution plans thousands, and fs::path splits each into parts.
  if (is_safe_relative(path) && !is_state_path(path)) return path;
  std::string normal = fs::path(path).lexically_normal().string();
  if (!is_safe_relative(normal) || is_state_path(normal)) {
    return make_error(ExitCode::error, "the {} path {} is not a path inside the venv", list, path);
  }
  return normal;
}

// The add and remove sets: every `add` path is a staged file or symlink (an existing file at
// its place is replaced, so also removed), every `remove` path a file that is still there.
Status collect_paths(StepPlan& plan, const ChangeSet& changes) {
  for (const std::string& p : changes.add) {
    VENVFIX_TRY_ASSIGN(std::string normal, normalise(p, "add"));
    plan.add.insert(std::move(normal));
  }
  for (const std::string& p : changes.remove) {
    VENVFIX_TRY_ASSIGN(std::string normal, normalise(p, "remove"));
    plan.remove.insert(std::move(normal));
  }
  std::set<std::string_view> replaced;  // added paths with a file there now
  for (const std::string& p : plan.add) {
    VENVFIX_TRY_ASSIGN(auto staged, lstat_at(plan.rootfd, join(plan.staging, p), plan.root));
    if (!staged || !(S_ISREG(staged->st_mode) || S_ISLNK(staged->st_mode))) {
      return make_error(ExitCode::error, "{} is not a staged file or symlink",
                        (plan.root / plan.staging / p).string());
    }
    VENVFIX_TRY_ASSIGN(auto present, lstat_at(plan.rootfd, p, plan.root));
    if (!present) continue;
    if (S_ISDIR(present->st_mode)) {
      return make_error(ExitCode::error, "cannot install {}: a directory is in the way",
                        (plan.root / p).string());
    }
    plan.remove.insert(p);  // replaced: the old file is kept for roll back
    replaced.insert(p);
  }
  for (auto it = plan.remove.begin(); it != plan.remove.end();) {
    if (replaced.contains(*it)) {  // seen above: a file (not a directory) is there
      ++it;
      continue;
    }
    VENVFIX_TRY_ASSIGN(auto present, lstat_at(plan.rootfd, *it, plan.root));
    if (!present) {
      spdlog::debug("{} is already gone", (plan.root / *it).string());
      it = plan.remove.erase(it);
      continue;
    }
    if (S_ISDIR(present->st_mode)) {
      return make_error(ExitCode::error, "cannot remove {}: it is a directory",
                        (plan.root / *it).string());
    }
    ++it;
  }
  return ok();
}

// How need_dirs treats the prefixes of a path.
enum class Prefixes {
  ancestors,  // an added file's parents: each must be a directory (a symlink to one will do);
              // a file in the way is an error
  inclusive   // a listed directory and its parents: anything present (lstat) is left alone
};

// Whether directory `dir` must be created; for Prefixes::ancestors, `for_path` is the file
// that needs it.
Result<bool> is_missing(const StepPlan& plan, const std::string& dir, Prefixes prefixes,
                        const std::string& for_path) {
  if (prefixes == Prefixes::inclusive) {
    VENVFIX_TRY_ASSIGN(auto st, lstat_at(plan.rootfd, dir, plan.root));
    return !st.has_value();
  }
  struct stat st {};
  if (::fstatat(plan.rootfd, dir.c_str(), &st, 0) == 0) {
    if (S_ISDIR(st.st_mode)) return false;
    return make_error(ExitCode::error,
                      "cannot install {}: {} is a file, not a directory (turning a file into a "
                      "directory is not supported)",
                      (plan.root / for_path).string(), (plan.root / dir).string());
  }
  if (errno != ENOENT) {
    return make_error(ExitCode::error, "{}: {}", (plan.root / dir).string(), errno_message(errno));
  }
  return true;
}

// Appends a make_dir step for each missing prefix of `path` (parents first): its ancestors,
// and with Prefixes::inclusive `path` itself. A new directory gets the mode of its staging
// counterpart when that is a directory, else 0755.
Status need_dirs(StepPlan& plan, const std::string& path, Prefixes prefixes) {
  for (std::size_t at = 0;; ++at) {
    at = path.find('/', at);
    if (at == std::string::npos && prefixes == Prefixes::ancestors) return ok();
    std::string dir = path.substr(0, at);
    plan.add_ancestors.insert(dir);
    if (!plan.made.contains(dir) && !plan.present.contains(dir)) {
      VENVFIX_TRY_ASSIGN(bool missing, is_missing(plan, dir, prefixes, path));
      // An ancestor found to be a directory stays one for the other files under it; what
      // Prefixes::inclusive finds may be anything, so it is not remembered.
      if (!missing && prefixes == Prefixes::ancestors) plan.present.insert(dir);
      if (missing) {
        struct stat staged {};
        std::uint32_t mode = 0755;
        if (::fstatat(plan.rootfd, join(plan.staging, dir).c_str(), &staged, 0) == 0 &&
            S_ISDIR(staged.st_mode)) {
          mode = staged.st_mode & 07777;
        }
        plan.made.insert(dir);
        plan.steps.push_back({StepOp::make_dir, dir, mode});
      }
    }
    if (at == std::string::npos) return ok();
  }
}

std::size_t depth(const std::string& path) {
  return static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

// Directories never pruned: the root, bin, each site-packages and everything above them.
std::set<std::string> protected_dirs(const env::Venv& venv) {
  std::set<std::string> out = {"", "bin", ".venvfix"};
  for (const fs::path& site : venv.site_packages) {
    std::string rel = site.lexically_relative(venv.root).string();
    while (!rel.empty() && rel != ".") {
      out.insert(rel);
      rel = parent_of(rel);
    }
  }
  return out;
}

// Lists the names in directory `dir` (relative to rootfd).
Result<std::vector<std::string>> list_dir(int rootfd, const std::string& dir,
                                          const fs::path& root) {
  const Fd fd(::openat(rootfd, dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  std::vector<std::string> names;
  const int error = !fd.valid() ? errno : for_each_dir_entry(fd.get(), [&](const DirEntry& entry) {
    names.emplace_back(entry.name);
    return true;
  });
  if (error != 0) {
    return make_error(ExitCode::error, "cannot read {}: {}", (root / dir).string(),
                      errno_message(error));
  }
  return names;
}

// The candidates for pruning: the listed directories, and (Prune::emptied) every unprotected
// parent of a removed file; deepest first.
Result<std::vector<std::string>> prune_candidates(const StepPlan& plan, const env::Venv& venv,
                                                  const DirectoryChanges& dirs) {
  std::set<std::string> keep = protected_dirs(venv);
  std::set<std::string> candidates;
  for (const std::string& listed : dirs.remove) {
    VENVFIX_TRY_ASSIGN(std::string dir, normalise(listed, "remove_dirs"));
    if (!keep.contains(dir)) candidates.insert(dir);
  }
  for (const std::string& p : plan.remove) {
    if (plan.add.contains(p) || dirs.prune == DirectoryChanges::Prune::listed_only) continue;
    for (std::string dir = parent_of(p); !dir.empty() && !keep.contains(dir);
         dir = parent_of(dir)) {
      candidates.insert(dir);
    }
  }
  std::vector<std::string> ordered(candidates.begin(), candidates.end());
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return depth(a) > depth(b); });
  return ordered;
}

// A prune_dir step for each candidate the removals leave empty (nothing is added under it).
Status add_prunes(StepPlan& plan, const env::Venv& venv, const DirectoryChanges& dirs) {
  VENVFIX_TRY_ASSIGN(std::vector<std::string> ordered, prune_candidates(plan, venv, dirs));
  std::set<std::string> pruned;
  for (const std::string& dir : ordered) {
    if (plan.add_ancestors.contains(dir)) continue;
    VENVFIX_TRY_ASSIGN(auto st, lstat_at(plan.rootfd, dir, plan.root));
    if (!st || !S_ISDIR(st->st_mode)) continue;
    VENVFIX_TRY_ASSIGN(auto names, list_dir(plan.rootfd, dir, plan.root));
    bool empty_after = std::all_of(names.begin(), names.end(), [&](const std::string& name) {
      std::string child = join(dir, name);
      return (plan.remove.contains(child) && !plan.add.contains(child)) || pruned.contains(child);
    });
    if (!empty_after) continue;
    pruned.insert(dir);
    plan.steps.push_back({StepOp::prune_dir, dir, static_cast<std::uint32_t>(st->st_mode & 07777)});
  }
  return ok();
}

}  // namespace

Result<std::vector<Step>> plan_steps(const env::Venv& venv, int rootfd, const std::string& staging,
                                     const ChangeSet& changes, const DirectoryChanges& dirs) {
  StepPlan plan{venv.root, rootfd, staging, {}, {}, {}, {}, {}, {}};
  VENVFIX_TRY(collect_paths(plan, changes));
  for (const std::string& p : plan.add) VENVFIX_TRY(need_dirs(plan, p, Prefixes::ancestors));
  for (const std::string& listed : dirs.make) {
    VENVFIX_TRY_ASSIGN(std::string dir, normalise(listed, "make_dirs"));
    VENVFIX_TRY(need_dirs(plan, dir, Prefixes::inclusive));
  }
  for (const std::string& p : plan.remove) plan.steps.push_back({StepOp::move_out, p, 0});
  for (const std::string& p : plan.add) plan.steps.push_back({StepOp::move_in, p, 0});
  VENVFIX_TRY(add_prunes(plan, venv, dirs));
  return std::move(plan.steps);
}

}  // namespace venvfix::txn
