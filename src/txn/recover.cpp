#include "venvfix/txn/recover.hpp"

#include <spdlog/spdlog.h>

#include "txn/paths.hpp"
#include "txn/replay.hpp"
#include "venvfix/txn/journal.hpp"

namespace venvfix::txn {

Result<RecoverReport> recover(const env::Venv& venv, const VenvLock& lock, StepFs& disk) {
  if (lock.venv_root() != venv.root) {
    return make_error(ExitCode::error, "internal error: the lock held is for {}, not {}",
                      lock.venv_root().string(), venv.root.string());
  }
  VENVFIX_TRY_ASSIGN(Fd root, open_root(venv));
  VENVFIX_TRY_ASSIGN(std::optional<Journal> journal, read_journal(venv));
  RecoverReport report;
  if (!journal) {
    // Staging directories no transaction refers to: an apply killed before begin(). We hold
    // the lock, so nobody is filling them.
    VENVFIX_TRY(remove_tree_at(disk, root.get(), ".venvfix/staging", venv.root));
    // Leftovers after journal.json was removed.
    VENVFIX_TRY(remove_tree_at(disk, root.get(), ".venvfix/journal", venv.root));
    return report;
  }
  report.id = journal->id;
  report.reason = journal->reason;
  VENVFIX_TRY_ASSIGN(std::optional<KeepSnapshot> keep, read_commit_marker(venv));
  if (keep) {
    VENVFIX_TRY(finish_journal(disk, venv, root.get(), *journal, *keep));
    report.outcome = RecoverOutcome::completed;
  } else {
    VENVFIX_TRY(undo_journal(disk, venv, root.get(), *journal));
    report.outcome = RecoverOutcome::rolled_back;
  }
  return report;
}

}  // namespace venvfix::txn
