// A transaction: a set of file moves into and out of the venv that either all happen or none,
// even across kill -9 or a power cut (docs/transactions.md).
//
// begin() writes a journal listing every step and makes it durable before anything in the
// venv moves. execute() performs the steps: each is one rename(2) (atomic), so after a crash
// the filesystem itself tells which steps happened — the journal needs no per-step progress
// records. commit() makes the renames durable (batched directory fsyncs) and writes a commit
// marker; from then on the transaction is "after". Without the marker, `venvfix recover`
// (recover.hpp) undoes every step: the venv returns to exactly the state before begin().
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/step_fs.hpp"

namespace venvfix::txn {

// A staging directory on the venv's filesystem (<venv>/.venvfix/staging/<id>/), laid out like
// the venv root: wheel installs write into it, then a transaction renames from it. It is
// removed by the transaction that uses it (commit or roll back); a staging directory no
// transaction used is removed by the next `recover` or `snapshot prune`.
Result<fs::path> make_staging_dir(const env::Venv& venv);

enum class KeepSnapshot { no, yes };

struct ChangeSet {
  std::string reason;  // "apply plan.json", "uninstall nvidia-cudnn-cu13"
  fs::path staging;    // from make_staging_dir
  // venv-relative paths of files/symlinks in `staging` to move into place
  std::vector<std::string> add;
  // venv-relative paths (files/symlinks) to take out of the venv
  std::vector<std::string> remove;
  // A path in both lists is replaced; an `add` path that already exists in the venv is
  // replaced too (its old file is kept for roll back like any removed one). A `remove` path
  // that does not exist is skipped. Parent directories are created as needed (with the mode of
  // the staging directory's counterpart, else 0755); directories left empty by `remove` are
  // pruned (up to, not including, site-packages, bin and the root). Both are restored exactly
  // on roll back.
};

// What a snapshot restore adds to a ChangeSet (kept apart so that ChangeSet stays the plain
// four-field aggregate apply and uninstall fill in).
struct DirectoryChanges {
  std::vector<std::string> make;    // directories to create even when nothing goes in
  std::vector<std::string> remove;  // directories to remove when they are empty after removals
  enum class Prune { emptied, listed_only };
  // emptied: every directory the removals leave empty is pruned too (ChangeSet's rule);
  // listed_only: only `remove` are (a restore recreates an exact directory set).
  Prune prune = Prune::emptied;
  // The snapshot being restored is kept: what the transaction moves out of it is linked (or
  // cloned) back after the commit, so it can be restored again.
  bool keep_source = false;
  // The caller already made every staged file's data and name durable (a restore from the
  // store: links to data a snapshot made durable, their directories fsync'ed): begin() asks
  // the disk for nothing more before the journal.
  bool staged_durable = false;
};

class Transaction {
 public:
  // Checks the change set (every `add` path is a file or symlink in staging, no path escapes
  // the venv, no file turns into a directory or back), refuses over an unfinished transaction
  // (ExitCode::locked), writes the journal (<venv>/.venvfix/journal/) and makes it and the
  // staged files durable. Nothing in the venv moves yet. Every write of the transaction (its
  // steps, journal, fsyncs, commit and roll back) goes through `disk`, which must outlive it.
  static Result<Transaction> begin(const env::Venv& venv, const VenvLock& lock,
                                   const ChangeSet& changes, StepFs& disk = default_step_fs());
  // begin() for a snapshot restore: `changes.staging` is the snapshot's files/ directory
  // (kept on roll back) and a successful commit deletes the snapshot `consumes`.
  static Result<Transaction> begin_consuming(const env::Venv& venv, const VenvLock& lock,
                                             const ChangeSet& changes, const DirectoryChanges& dirs,
                                             const std::string& consumes,
                                             StepFs& disk = default_step_fs());

  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  // A transaction neither committed nor rolled back is rolled back (errors are logged).
  ~Transaction();

  // Removed/replaced files -> the transaction's snapshot directory (rename), staged files ->
  // their place, then empty directories pruned. On error the venv is partly changed: call
  // roll_back() (or let the destructor do it).
  Status execute();
  // Makes every rename durable, then writes the commit marker. With KeepSnapshot::yes the
  // replaced files stay as a snapshot (its id is returned) that `venvfix rollback` restores;
  // with no they are deleted. Staging and journal are removed.
  Result<std::optional<std::string>> commit(KeepSnapshot keep);
  // Back to exactly the state before begin(); staging removed. Undoes everything it can and
  // reports every error it met (it does not stop at the first).
  Status roll_back();

  const std::string& id() const;

  struct State;  // defined in src/txn/

 private:
  explicit Transaction(std::unique_ptr<State> state);
  std::unique_ptr<State> m_state;
};

}  // namespace venvfix::txn
