// Private helpers of the txn module: path checks and *at() file operations relative to an
// open directory (the venv root), which skip repeated path lookups and cannot be redirected
// by a renamed ancestor.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>
#include <string_view>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/txn/step_fs.hpp"

namespace venvfix::txn {

// Non-empty, relative, no "." / ".." / empty components, no NUL: stays inside its root.
bool is_safe_relative(std::string_view path);
// Under .venvfix/ (venvfix's own state, never part of a venv change).
bool is_state_path(std::string_view path);
// Letters, digits, '-', '_', '.', not starting with '.'; for snapshot and transaction ids.
bool is_safe_id(std::string_view id);

// "a/b/c" -> "a/b"; "a" -> "".
std::string parent_of(std::string_view path);

// fstatat(dirfd, path, AT_SYMLINK_NOFOLLOW); nullopt when absent (ENOENT/ENOTDIR), an Error
// for any other failure.
Result<std::optional<struct stat>> lstat_at(int dirfd, const std::string& path,
                                            const fs::path& root);

// Creates every missing directory of base/rel (relative to dirfd). A created directory
// base/x gets the permission bits of mode_base/x when that is a directory (mode_base "" is
// dirfd itself), else 0755; components of `base` itself get 0755. Creates through `disk`.
Status make_dirs_at(StepFs& disk, int dirfd, const std::string& base, const std::string& rel,
                    const std::string& mode_base, const fs::path& root);

// Joins venv-relative parts ("" is the root).
std::string join(std::string_view a, std::string_view b);

// Removes a tree (relative to dirfd) through `disk` if it exists; errors name root/path.
Status remove_tree_at(StepFs& disk, int dirfd, const std::string& path, const fs::path& root);

}  // namespace venvfix::txn
