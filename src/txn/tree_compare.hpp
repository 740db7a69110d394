// Comparing the venv with a tree snapshot's state (private to txn; snapshot_state.hpp's
// compare_with_venv for tree snapshots).
#pragma once

#include "txn/manifest.hpp"
#include "txn/snapshot_state.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::txn {

// One job per directory of the state, on every core: the directory is opened from the root one
// component at a time without following a symlink, read, and each of its entries compared with
// the manifest's entries in it (one fstatat each); what the venv holds beyond them is added (a
// new directory with everything below it). A directory unchanged since the snapshot's walk
// (walk_base.hpp: version 3) is not read, only its entries stat'ed by name. The lists come back
// sorted.
Result<StateDelta> compare_tree(const env::Venv& venv, const Manifest& manifest,
                                KeepIdentities keep = KeepIdentities::no);

}  // namespace venvfix::txn
