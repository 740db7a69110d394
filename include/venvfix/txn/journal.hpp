// The journal of a transaction: every step, written and made durable before the first step
// runs (docs/transactions.md, "Journal format").
//
// Files under <venv>/.venvfix/journal/:
//   journal.json  the steps (schema venvfix-journal/1); its presence means "unfinished"
//   committed     the commit marker: "keep-snapshot yes|no"; its presence means "after"
// Every step is one rename(2), mkdir(2) or rmdir(2) of a venv-relative path, and which steps
// ran is decided from the filesystem alone (see replay.cpp), so progress is never written.
#pragma once

#include <chrono>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/txn/step_fs.hpp"
#include "venvfix/txn/transaction.hpp"

namespace venvfix::txn {

enum class StepOp {
  make_dir,  // mkdir `path` with `mode` (it did not exist at begin)
  move_out,  // rename `path` -> <snapshot files>/`path` (removed or replaced file)
  move_in,   // rename <staging>/`path` -> `path`
  prune_dir  // rmdir `path` (left empty by the removals; its mode kept for undo)
};
std::string_view to_string(StepOp op);

struct Step {
  StepOp op = StepOp::move_in;
  std::string path;        // venv-relative, normalised, never empty, never leaving the venv
  std::uint32_t mode = 0;  // make_dir, prune_dir: permission bits
};

struct Journal {
  std::string id;  // also the id of the transaction's snapshot
  std::string reason;
  std::string created;  // UTC, ISO 8601
  long pid = 0;
  std::string staging;        // venv-relative directory the move_in steps take files from
  bool staging_owned = true;  // removed when the transaction ends (false: a snapshot's files)
  // With `relink`, the commit makes snapshot `consumes` whole again instead (every file
  // moved out of it is linked or cloned back from the venv) and keeps it.
  bool relink = false;
  std::string consumes;  // a snapshot the commit deletes (a rollback's source), or ""
  std::vector<Step> steps;

  // <venv-relative> .venvfix/snapshots/<id>/files: where move_out puts files.
  std::string snapshot_files() const;
};

fs::path journal_dir(const env::Venv& venv);
fs::path journal_file(const env::Venv& venv);
fs::path commit_marker(const env::Venv& venv);

std::string to_json_text(const Journal& journal);
// Parses and validates (paths relative and inside the venv); errors name `source`.
Result<Journal> parse_journal(std::string_view text, std::string_view source);

// Writes journal.json (fsync'd) and fsyncs its directory and <venv>/.venvfix. The writes here
// go through `fs` (step_fs.hpp), the reads do not.
Status write_journal(StepFs& disk, const env::Venv& venv, const Journal& journal);
// nullopt when no journal exists.
Result<std::optional<Journal>> read_journal(const env::Venv& venv);

// The commit marker (atomic write + directory fsync) and reading it back (nullopt: none).
Status write_commit_marker(StepFs& disk, const env::Venv& venv, KeepSnapshot keep);
Result<std::optional<KeepSnapshot>> read_commit_marker(const env::Venv& venv);

// Removes journal.json first (the point after which the transaction is over), then the rest
// of the journal directory.
Status remove_journal(StepFs& disk, const env::Venv& venv);

// "20261129T223000Z-1a2b3c": sortable by time, unique in practice (pid and a counter).
std::string new_id();
std::string utc_now_iso8601();
// `when` as "2026-11-29T22:30:00Z" (UTC, whole seconds).
std::string utc_iso8601(std::chrono::system_clock::time_point when);

}  // namespace venvfix::txn
