// Restoring a version 2 tree snapshot from the link store (private to txn).
#pragma once

#include <optional>
#include <string>

#include "txn/manifest.hpp"
#include "txn/snapshot_state.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/step_fs.hpp"
#include "venvfix/txn/transaction.hpp"

namespace venvfix::txn {

// Puts back only the paths of `delta` (compare_with_venv): each file to put back is linked from
// the store into a fresh staging directory (symlinks recreated from their manifest targets,
// missing directories made there with their modes), then one journaled transaction moves what
// differs out and the staged paths in. Refuses before writing anything when a stored file was
// changed in place or is missing, naming every such venv path. The snapshot stays as it was:
// what it put back are its own inodes, so its manifest still describes the venv.
Result<std::optional<std::string>> restore_from_store(const env::Venv& venv, const VenvLock& lock,
                                                      const Manifest& manifest,
                                                      const StateDelta& delta, KeepSnapshot keep,
                                                      StepFs& disk);

}  // namespace venvfix::txn
