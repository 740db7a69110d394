// How the venv differs from a snapshot's state; shared by `snapshot diff` and restore.
#pragma once

#include <string>
#include <vector>

#include "txn/manifest.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::txn {

struct StateDelta {
  std::vector<std::string> added_files;   // in the venv, not in the state (files, symlinks)
  std::vector<std::string> added_dirs;    // directories in the venv, not in the state
  std::vector<std::string> put_back;      // state files/symlinks absent or different now
  std::vector<std::string> changed;       // the subset of put_back present in the venv
  std::vector<std::string> missing_dirs;  // state directories absent now
  // The manifest's entries of put_back and missing_dirs, in no order: what a restore needs to
  // know of them, without indexing every entry of a 30,000-file manifest by path.
  std::vector<const ManifestEntry*> entries_to_restore;
  // Tree snapshots: directories of the state read, and those not read because they had not
  // changed since the snapshot's walk (tree_compare.hpp).
  std::size_t dirs_read = 0;
  std::size_t dirs_unchanged = 0;
  // With KeepIdentities::yes: each regular file of the state that is a regular file in the venv
  // now, with the identity the comparison's stat found (`run` hands them to its file check).
  std::vector<std::pair<const ManifestEntry*, FileIdentity>> files_seen;
};

enum class KeepIdentities { no, yes };

// Reads <venv>/.venvfix/snapshots/<id>/manifest.
Result<Manifest> load_manifest(const env::Venv& venv, const std::string& id);
// Reads its header only (no entries) when it carries its counts (version 3), else all of it:
// enough for Manifest::info(), without parsing 30,000 entries per snapshot listed.
Result<Manifest> load_manifest_header(const env::Venv& venv, const std::string& id);

Result<StateDelta> compare_with_venv(const env::Venv& venv, const Manifest& manifest,
                                     KeepIdentities keep = KeepIdentities::no);

}  // namespace venvfix::txn
