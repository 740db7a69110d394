// A cheap stamp of what pip and uv change when they install or remove a distribution: every
// *.dist-info and *.egg-info entry of the venv's site-packages directories, with the identity
// (inode, size, times) of the entry and of its RECORD. pip and uv write a new dist-info
// directory and its RECORD for every install and remove them on uninstall, so a changed stamp
// means another installer ran. Costs one readdir per site-packages directory and two stats per
// distribution, no hashing: `apply` takes it at its start and compares it right before the
// first journaled move.
#pragma once

#include <map>
#include <string>

#include "venvfix/base/result.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::apply {

struct VenvStamp {
  // venv-relative dist-info path -> the identities of the entry and of its RECORD, as text.
  std::map<std::string, std::string> entries;
  bool operator==(const VenvStamp&) const = default;
};

// Errors: a site-packages directory that cannot be read (ExitCode::error, naming it).
Result<VenvStamp> stamp_venv(const env::Venv& venv);

// What differs between two stamps, in words, naming at most three entries ("added
// demo-1.0.dist-info, changed torch-2.8.0.dist-info"); "" when they are equal.
std::string describe_stamp_change(const VenvStamp& before, const VenvStamp& after);

}  // namespace venvfix::apply
