// Running, undoing and finishing a journal's steps. Shared by Transaction (in-process) and
// recover() (after a crash); every function here is idempotent and decides what already
// happened from the filesystem:
//   make_dir  done  <=> the directory exists
//   move_out  done  <=> <snapshot files>/path exists (that directory is the transaction's own)
//   move_in   done  <=> <staging>/path is gone (staging files are checked present at begin)
//   prune_dir done  <=> the directory is gone (it existed at begin)
#pragma once

#include <cstddef>

#include "venvfix/base/fs.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/txn/journal.hpp"
#include "venvfix/txn/step_fs.hpp"

namespace venvfix::txn {

// Every write below goes through `disk` (step_fs.hpp); reads do not.

// Runs one step (not yet done). Errors name the path.
Status run_step(StepFs& disk, int rootfd, const fs::path& root, const Journal& journal,
                const Step& step);

// fsyncs each of `dirs` (relative to rootfd) on several threads: the filesystem folds concurrent
// fsyncs into one journal commit, where one thread would wait for a commit per directory. A
// directory that is gone (ENOENT) needs nothing.
Status sync_dirs(StepFs& disk, int rootfd, const fs::path& root,
                 const std::vector<std::string>& dirs);

// fsyncs every directory the steps changed (in the venv, the snapshot and the staging
// directory), each once.
Status sync_touched_dirs(StepFs& disk, int rootfd, const fs::path& root, const Journal& journal);

// Undoes every step that happened, in reverse order; never stops at the first error (all are
// joined into one). Then makes the undo durable, removes the transaction's snapshot, its
// staging directory (when owned) and the journal.
Status undo_journal(StepFs& disk, const env::Venv& venv, int rootfd, const Journal& journal);

// After the commit marker: removes staging (when owned), the snapshot unless kept, the
// consumed snapshot, then the journal.
Status finish_journal(StepFs& disk, const env::Venv& venv, int rootfd, const Journal& journal,
                      KeepSnapshot keep);

// After a restore that keeps its source snapshot: links (hardlink snapshots) or clones
// (reflink ones) every file the restore moved out of the snapshot back into it from the venv,
// and rewrites its manifest with their new identities. Idempotent.
Status relink_snapshot(StepFs& disk, const env::Venv& venv, int rootfd, const Journal& journal);

// Opens the venv root as a directory descriptor.
Result<Fd> open_root(const env::Venv& venv);

}  // namespace venvfix::txn
