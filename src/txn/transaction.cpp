#include "venvfix/txn/transaction.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <set>

#include <spdlog/spdlog.h>

#include "txn/manifest.hpp"
#include "txn/paths.hpp"
#include "txn/replay.hpp"
#include "venvfix/txn/crash_point.hpp"
#include "venvfix/txn/journal.hpp"

namespace venvfix::txn {

enum class Phase { begun, committed, rolled_back };

struct Transaction::State {
  env::Venv venv;
  Journal journal;
  Fd root;
  Phase phase = Phase::begun;
  std::size_t executed = 0;  // steps run by execute()
};

namespace {

using Clock = std::chrono::steady_clock;

double millis_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

Result<std::string> normalise(const std::string& path, std::string_view list) {
  std::string normal = fs::path(path).lexically_normal().string();
  if (!is_safe_relative(normal) || is_state_path(normal)) {
    return make_error(ExitCode::error, "the {} path {} is not a path inside the venv", list, path);
  }
  return normal;
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
  int fd = ::openat(rootfd, dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    return make_error(ExitCode::error, "cannot read {}: {}", (root / dir).string(),
                      errno_message(errno));
  }
  DIR* stream = ::fdopendir(fd);
  if (stream == nullptr) {
    ::close(fd);
    return make_error(ExitCode::error, "cannot read {}: {}", (root / dir).string(),
                      errno_message(errno));
  }
  std::vector<std::string> names;
  while (dirent* entry = ::readdir(stream)) {
    std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    names.emplace_back(name);
  }
  ::closedir(stream);
  return names;
}

Result<std::vector<Step>> plan_steps(const env::Venv& venv, int rootfd, const std::string& staging,
                                     const ChangeSet& changes, const DirectoryChanges& dirs) {
  const fs::path& root = venv.root;
  std::set<std::string> add;
  std::set<std::string> remove;
  for (const std::string& p : changes.add) {
    VENVFIX_TRY_ASSIGN(std::string normal, normalise(p, "add"));
    add.insert(std::move(normal));
  }
  for (const std::string& p : changes.remove) {
    VENVFIX_TRY_ASSIGN(std::string normal, normalise(p, "remove"));
    remove.insert(std::move(normal));
  }
  for (const std::string& p : add) {
    VENVFIX_TRY_ASSIGN(auto staged, lstat_at(rootfd, join(staging, p), root));
    if (!staged || !(S_ISREG(staged->st_mode) || S_ISLNK(staged->st_mode))) {
      return make_error(ExitCode::error, "{} is not a staged file or symlink",
                        (root / staging / p).string());
    }
    VENVFIX_TRY_ASSIGN(auto present, lstat_at(rootfd, p, root));
    if (present) {
      if (S_ISDIR(present->st_mode)) {
        return make_error(ExitCode::error, "cannot install {}: a directory is in the way",
                          (root / p).string());
      }
      remove.insert(p);  // replaced: the old file is kept for roll back
    }
  }
  for (auto it = remove.begin(); it != remove.end();) {
    VENVFIX_TRY_ASSIGN(auto present, lstat_at(rootfd, *it, root));
    if (!present) {
      spdlog::debug("{} is already gone", (root / *it).string());
      it = remove.erase(it);
      continue;
    }
    if (S_ISDIR(present->st_mode)) {
      return make_error(ExitCode::error, "cannot remove {}: it is a directory",
                        (root / *it).string());
    }
    ++it;
  }

  std::vector<Step> steps;
  // Parent directories the added files need, parents first.
  std::set<std::string> made;
  std::set<std::string> add_ancestors;
  for (const std::string& p : add) {
    std::string dir;
    std::size_t at = 0;
    while ((at = p.find('/', at)) != std::string::npos) {
      dir = p.substr(0, at);
      ++at;
      add_ancestors.insert(dir);
      if (made.contains(dir)) continue;
      struct stat st {};
      if (::fstatat(rootfd, dir.c_str(), &st, 0) == 0) {
        if (S_ISDIR(st.st_mode)) continue;
        return make_error(ExitCode::error,
                          "cannot install {}: {} is a file, not a directory (turning a file "
                          "into a directory is not supported)",
                          (root / p).string(), (root / dir).string());
      }
      if (errno != ENOENT) {
        return make_error(ExitCode::error, "{}: {}", (root / dir).string(), errno_message(errno));
      }
      std::uint32_t mode = 0755;
      if (::fstatat(rootfd, join(staging, dir).c_str(), &st, 0) == 0 && S_ISDIR(st.st_mode)) {
        mode = st.st_mode & 07777;
      }
      made.insert(dir);
      steps.push_back({StepOp::make_dir, dir, mode});
    }
  }
  for (const std::string& listed : dirs.make) {
    VENVFIX_TRY_ASSIGN(std::string dir, normalise(listed, "make_dirs"));
    std::string prefix;
    std::size_t at = 0;
    while (true) {
      at = dir.find('/', at);
      prefix = dir.substr(0, at);
      add_ancestors.insert(prefix);
      if (!made.contains(prefix)) {
        VENVFIX_TRY_ASSIGN(auto st, lstat_at(rootfd, prefix, root));
        if (!st) {
          struct stat staged {};
          std::uint32_t mode = 0755;
          if (::fstatat(rootfd, join(staging, prefix).c_str(), &staged, 0) == 0 &&
              S_ISDIR(staged.st_mode)) {
            mode = staged.st_mode & 07777;
          }
          made.insert(prefix);
          steps.push_back({StepOp::make_dir, prefix, mode});
        }
      }
      if (at == std::string::npos) break;
      ++at;
    }
  }
  for (const std::string& p : remove) steps.push_back({StepOp::move_out, p, 0});
  for (const std::string& p : add) steps.push_back({StepOp::move_in, p, 0});

  // Directories the removals leave empty, deepest first.
  std::set<std::string> keep = protected_dirs(venv);
  std::set<std::string> candidates;
  for (const std::string& listed : dirs.remove) {
    VENVFIX_TRY_ASSIGN(std::string dir, normalise(listed, "remove_dirs"));
    if (!keep.contains(dir)) candidates.insert(dir);
  }
  for (const std::string& p : remove) {
    if (add.contains(p) || dirs.prune == DirectoryChanges::Prune::listed_only) continue;
    for (std::string dir = parent_of(p); !dir.empty() && !keep.contains(dir);
         dir = parent_of(dir)) {
      candidates.insert(dir);
    }
  }
  std::vector<std::string> ordered(candidates.begin(), candidates.end());
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return depth(a) > depth(b); });
  std::set<std::string> pruned;
  for (const std::string& dir : ordered) {
    if (add_ancestors.contains(dir)) continue;
    VENVFIX_TRY_ASSIGN(auto st, lstat_at(rootfd, dir, root));
    if (!st || !S_ISDIR(st->st_mode)) continue;
    VENVFIX_TRY_ASSIGN(auto names, list_dir(rootfd, dir, root));
    bool empty_after = std::all_of(names.begin(), names.end(), [&](const std::string& name) {
      std::string child = join(dir, name);
      return (remove.contains(child) && !add.contains(child)) || pruned.contains(child);
    });
    if (!empty_after) continue;
    pruned.insert(dir);
    steps.push_back({StepOp::prune_dir, dir, static_cast<std::uint32_t>(st->st_mode & 07777)});
  }
  return steps;
}

inline constexpr std::size_t k_fsync_each_limit = 64;

Status make_staged_data_durable(int rootfd, const fs::path& root, const Journal& journal) {
  std::size_t count = 0;
  for (const Step& step : journal.steps) count += step.op == StepOp::move_in ? 1 : 0;
  // A snapshot being restored: its files were made durable when it was taken (create ends
  // with a syncfs; a transaction's snapshot holds files that were the venv's).
  if (count == 0 || !journal.staging_owned) return ok();
  if (count > k_fsync_each_limit) {
    if (::syncfs(rootfd) != 0) {
      return make_error(ExitCode::error, "{}: syncfs: {}", root.string(), errno_message(errno));
    }
    return ok();
  }
  for (const Step& step : journal.steps) {
    if (step.op != StepOp::move_in) continue;
    std::string staged = join(journal.staging, step.path);
    int fd = ::openat(rootfd, staged.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      if (errno == ELOOP) continue;  // a symlink: its target string is metadata
      return make_error(ExitCode::error, "cannot open {}: {}", (root / staged).string(),
                        errno_message(errno));
    }
    Fd owned(fd);
    if (::fdatasync(fd) != 0) {
      return make_error(ExitCode::error, "{}: fdatasync: {}", (root / staged).string(),
                        errno_message(errno));
    }
  }
  return ok();
}

}  // namespace

Result<fs::path> make_staging_dir(const env::Venv& venv) {
  fs::path base = venv.state_dir() / "staging";
  std::error_code error;
  fs::create_directories(base, error);
  if (error) {
    return make_error(ExitCode::error, "cannot create {}: {}", base.string(), error.message());
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    fs::path dir = base / new_id();
    if (::mkdir(dir.c_str(), 0755) == 0) return dir;
    if (errno != EEXIST) {
      return make_error(ExitCode::error, "cannot create {}: {}", dir.string(),
                        errno_message(errno));
    }
  }
  return make_error(ExitCode::error, "cannot create a staging directory under {}", base.string());
}

Transaction::Transaction(std::unique_ptr<State> state) : m_state(std::move(state)) {}
Transaction::Transaction(Transaction&& other) noexcept = default;

Transaction::~Transaction() {
  if (m_state && m_state->phase == Phase::begun) {
    if (auto status = roll_back(); !status) {
      spdlog::error("{}", status.error().message);
    }
  }
}

const std::string& Transaction::id() const {
  return m_state->journal.id;
}

Result<Transaction> Transaction::begin(const env::Venv& venv, const VenvLock& lock,
                                       ChangeSet changes) {
  return begin_consuming(venv, lock, std::move(changes), DirectoryChanges{}, "");
}

Result<Transaction> Transaction::begin_consuming(const env::Venv& venv, const VenvLock& lock,
                                                 ChangeSet changes, const DirectoryChanges& dirs,
                                                 const std::string& consumes) {
  if (lock.venv_root() != venv.root) {
    return make_error(ExitCode::error, "internal error: the lock held is for {}, not {}",
                      lock.venv_root().string(), venv.root.string());
  }
  VENVFIX_TRY(require_no_unfinished_transaction(venv));
  VENVFIX_TRY_ASSIGN(Fd root, open_root(venv));
  std::string staging =
      fs::path(changes.staging).lexically_normal().lexically_relative(venv.root).string();
  if (!is_safe_relative(staging) || !staging.starts_with(".venvfix/")) {
    return make_error(ExitCode::error, "the staging directory {} is not under {}",
                      changes.staging.string(), venv.state_dir().string());
  }
  auto state = std::make_unique<State>();
  state->venv = venv;
  Journal& journal = state->journal;
  journal.id = new_id();
  journal.reason = changes.reason;
  journal.created = utc_now_iso8601();
  journal.pid = ::getpid();
  journal.staging = staging;
  // A staging directory under snapshots/ is a snapshot being restored: it is not ours to
  // delete on roll back (commit consumes it through `consumes`).
  journal.staging_owned = staging.starts_with(".venvfix/staging/");
  journal.consumes = consumes;
  journal.relink = dirs.keep_source && !consumes.empty();
  VENVFIX_TRY_ASSIGN(journal.steps, plan_steps(venv, root.get(), staging, changes, dirs));

  auto start = Clock::now();
  // The staged files' data must be durable before a commit marker can refer to them. A few
  // files get an fdatasync each; many get one syncfs(2), cheaper than thousands of fsyncs
  // (but it also flushes whatever else is dirty on that filesystem).
  VENVFIX_TRY(make_staged_data_durable(root.get(), venv.root, journal));
  double data_ms = millis_since(start);
  start = Clock::now();
  VENVFIX_TRY(write_journal(venv, journal));
  spdlog::debug(
      "transaction {}: {} steps; staged data sync {:.1f} ms, journal write+fsync {:.1f} ms",
      journal.id, journal.steps.size(), data_ms, millis_since(start));
  crash_point(0);
  state->root = std::move(root);
  return Transaction(std::move(state));
}

Status Transaction::execute() {
  State& s = *m_state;
  if (s.phase != Phase::begun) {
    return make_error(ExitCode::error, "internal error: transaction {} already ended",
                      s.journal.id);
  }
  for (; s.executed < s.journal.steps.size(); ++s.executed) {
    const Step& step = s.journal.steps[s.executed];
    if (auto status = run_step(s.root.get(), s.venv.root, s.journal, step); !status) {
      return with_context(std::move(status).error(), s.journal.reason);
    }
    crash_point(s.executed + 1);
  }
  return ok();
}

namespace {

// The transaction snapshot's manifest: what was moved out (now under files/) and what added.
Status write_transaction_manifest(const Transaction::State& s) {
  Manifest manifest;
  manifest.id = s.journal.id;
  manifest.kind = SnapshotKind::transaction;
  manifest.created = s.journal.created;
  manifest.method = "rename";
  manifest.reason = s.journal.reason;
  std::string files = s.journal.snapshot_files();
  for (const Step& step : s.journal.steps) {
    if (step.op == StepOp::move_out) {
      VENVFIX_TRY_ASSIGN(auto st, lstat_at(s.root.get(), join(files, step.path), s.venv.root));
      if (!st) continue;
      manifest.entries.push_back(entry_from_stat(S_ISLNK(st->st_mode) ? 'S' : 'F', *st, step.path));
    } else if (step.op == StepOp::move_in) {
      manifest.entries.push_back(plain_entry('A', 0, step.path));
    } else if (step.op == StepOp::make_dir) {
      manifest.entries.push_back(plain_entry('C', step.mode, step.path));
    } else if (step.op == StepOp::prune_dir) {
      manifest.entries.push_back(plain_entry('D', step.mode, step.path));
    }
  }
  fs::path dir = s.venv.state_dir() / "snapshots" / s.journal.id;
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) {
    return make_error(ExitCode::error, "cannot create {}: {}", dir.string(), error.message());
  }
  return write_file_atomic(dir / "manifest", manifest_text(manifest));
}

}  // namespace

Result<std::optional<std::string>> Transaction::commit(KeepSnapshot keep) {
  State& s = *m_state;
  if (s.phase != Phase::begun || s.executed != s.journal.steps.size()) {
    return make_error(ExitCode::error,
                      "internal error: transaction {} committed before all its steps ran",
                      s.journal.id);
  }
  // A transaction that changed nothing leaves no snapshot to roll back to.
  if (s.journal.steps.empty()) keep = KeepSnapshot::no;
  if (keep == KeepSnapshot::yes) VENVFIX_TRY(write_transaction_manifest(s));
  auto start = Clock::now();
  VENVFIX_TRY(sync_touched_dirs(s.root.get(), s.venv.root, s.journal));
  double sync_ms = millis_since(start);
  start = Clock::now();
  VENVFIX_TRY(write_commit_marker(s.venv, keep));
  spdlog::debug("transaction {}: directory fsyncs {:.1f} ms, commit marker {:.1f} ms", s.journal.id,
                sync_ms, millis_since(start));
  s.phase = Phase::committed;
  crash_point(s.journal.steps.size() + 1);
  VENVFIX_TRY(finish_journal(s.venv, s.root.get(), s.journal, keep));
  if (keep == KeepSnapshot::yes) return std::optional<std::string>(s.journal.id);
  return std::optional<std::string>();
}

Status Transaction::roll_back() {
  State& s = *m_state;
  if (s.phase == Phase::rolled_back) return ok();
  if (s.phase == Phase::committed) {
    return make_error(ExitCode::error,
                      "internal error: transaction {} is committed and cannot be rolled back",
                      s.journal.id);
  }
  s.phase = Phase::rolled_back;
  // A journal that is gone, or another transaction's, means `recover` already finished ours.
  VENVFIX_TRY_ASSIGN(std::optional<Journal> current, read_journal(s.venv));
  if (!current || current->id != s.journal.id) return ok();
  return undo_journal(s.venv, s.root.get(), s.journal);
}

}  // namespace venvfix::txn
