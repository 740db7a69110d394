// What removing or replacing an installed distribution takes out of the venv, computed the way
// `pip uninstall` does it, with one difference on purpose: a path that a distribution staying
// in the venv also lists in its RECORD is kept for it (pip deletes it and leaves that owner a
// ghost). Read-only: nothing is moved here; the transaction does that.
//
// What goes (pip's req_uninstall.py: uninstallation_paths, UninstallPathSet.add, _script_names):
// - every path the RECORD lists (scripts under bin/ and data files included, through their
//   "../../.." rows) that exists as a file or symlink;
// - for each listed `X.py`, `X.pyc`/`X.pyo` beside it and `__pycache__/X.<tag>[.opt-N].pyc`;
// - every file of the .dist-info directory, listed or not (a half-removed dist-info would be a
//   ghost distribution);
// - the console and gui scripts entry_points.txt names, in bin/.
// Never: a path outside the venv root (lexically, or through a symlinked parent directory), or
// under <venv>/.venvfix/ — these are reported as refused.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/dist/inventory.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::apply {

struct Removal {
  std::string dist;
  std::string version;
  // Paths relative to the venv root, "/"-separated, sorted, each an existing file or symlink.
  std::vector<std::string> remove;
  std::vector<std::string> kept;     // listed, but a remaining distribution owns them too
  std::vector<std::string> refused;  // listed, but outside the venv (absolute, as listed)
};

// The removal of inventory.distributions[index]. `leaving` holds the indices of every
// distribution that goes in the same transaction (removed or replaced): their ownership keeps
// nothing. `index` must be in range.
Removal plan_removal(const env::Venv& venv, const dist::Inventory& inventory, std::size_t index,
                     const std::set<std::size_t>& leaving);

// `path` (absolute) relative to the venv root, "/"-separated; empty when it is not inside the
// root, is the root, or lies under <venv>/.venvfix/. Lexical only.
std::string venv_relative(const env::Venv& venv, const fs::path& path);

}  // namespace venvfix::apply
