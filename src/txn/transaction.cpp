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
#include "txn/step_plan.hpp"
#include "venvfix/txn/journal.hpp"

namespace venvfix::txn {

enum class Phase { begun, committed, rolled_back };

struct Transaction::State {
  env::Venv venv;
  StepFs* disk = nullptr;  // every write goes through it
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

Status make_staged_data_durable(StepFs& disk, const fs::path& root, const Journal& journal) {
  // A snapshot being restored: its files were made durable when it was taken (create ends
  // with a syncfs; a transaction's snapshot holds files that were the venv's).
  if (!journal.staging_owned) return ok();
  std::vector<fs::path> staged;
  for (const Step& step : journal.steps) {
    if (step.op == StepOp::move_in) staged.push_back(root / join(journal.staging, step.path));
  }
  return make_files_durable(disk, root, staged);
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
                                       const ChangeSet& changes, StepFs& disk) {
  return begin_consuming(venv, lock, changes, DirectoryChanges{}, "", disk);
}

Result<Transaction> Transaction::begin_consuming(const env::Venv& venv, const VenvLock& lock,
                                                 const ChangeSet& changes,
                                                 const DirectoryChanges& dirs,
                                                 const std::string& consumes, StepFs& disk) {
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
  state->disk = &disk;
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
  auto start = Clock::now();
  VENVFIX_TRY_ASSIGN(journal.steps, plan_steps(venv, root.get(), staging, changes, dirs));
  const double plan_ms = millis_since(start);
  start = Clock::now();
  // The staged files' data must be durable before a commit marker can refer to them.
  if (!dirs.staged_durable) VENVFIX_TRY(make_staged_data_durable(disk, venv.root, journal));
  double data_ms = millis_since(start);
  start = Clock::now();
  if (auto written = write_journal(disk, venv, journal); !written) {
    // Nothing in the venv moved: a journal that exists but could not be made durable (its
    // directory's fsync failed) must not block the venv until `recover`.
    (void)remove_journal(disk, venv);
    return std::move(written).error();
  }
  spdlog::debug(
      "transaction {}: {} steps planned in {:.1f} ms; staged data sync {:.1f} ms, journal "
      "write+fsync {:.1f} ms",
      journal.id, journal.steps.size(), plan_ms, data_ms, millis_since(start));
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
    if (auto status = run_step(*s.disk, s.root.get(), s.venv.root, s.journal, step); !status) {
      return with_context(std::move(status).error(), s.journal.reason);
    }
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
  std::string dir = ".venvfix/snapshots/" + s.journal.id;
  VENVFIX_TRY(make_dirs_at(*s.disk, s.root.get(), dir, "", "", s.venv.root));
  return write_atomic(*s.disk, s.venv.root / dir / "manifest", manifest_text(manifest));
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
  VENVFIX_TRY(sync_touched_dirs(*s.disk, s.root.get(), s.venv.root, s.journal));
  double sync_ms = millis_since(start);
  start = Clock::now();
  VENVFIX_TRY(write_commit_marker(*s.disk, s.venv, keep));
  spdlog::debug("transaction {}: directory fsyncs {:.1f} ms, commit marker {:.1f} ms", s.journal.id,
                sync_ms, millis_since(start));
  s.phase = Phase::committed;
  VENVFIX_TRY(finish_journal(*s.disk, s.venv, s.root.get(), s.journal, keep));
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
  return undo_journal(*s.disk, s.venv, s.root.get(), s.journal);
}

}  // namespace venvfix::txn
