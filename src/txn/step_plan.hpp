// Turning a ChangeSet into the journal's steps (private to txn): which directories to create,
// which files to move out and in, which directories the removals leave empty.
#pragma once

#include <string>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/txn/journal.hpp"
#include "venvfix/txn/transaction.hpp"

namespace venvfix::txn {

// Checks the change set against the venv (rootfd) and `staging` (venv-relative) and returns its
// steps in journal order: make_dir (parents first), move_out, move_in, prune_dir (deepest
// first). Errors name the path and change nothing.
Result<std::vector<Step>> plan_steps(const env::Venv& venv, int rootfd, const std::string& staging,
                                     const ChangeSet& changes, const DirectoryChanges& dirs);

}  // namespace venvfix::txn
