// A fingerprint of a venv's tree: path, type, mode, size and content hash (symlink target)
// of every entry except <venv>/.venvfix/. Two equal fingerprints mean byte-for-byte equal
// trees for every purpose venvfix promises (timestamps and inode numbers are left out).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"

namespace venvfix::txn {

struct FingerprintEntry {
  char type = '?';  // 'f' file, 'l' symlink, 'd' directory, 'o' other
  std::uint32_t mode = 0;
  std::uint64_t size = 0;
  std::string content;  // sha256 hex of a file, the target of a symlink
  bool operator==(const FingerprintEntry&) const = default;
};

using Fingerprint = std::map<std::string, FingerprintEntry>;  // venv-relative path -> entry

Result<Fingerprint> fingerprint_tree(const fs::path& root);

// The differing paths, one per line ("only before: x", "only after: y", "differs: z"), at
// most `limit` lines; "" when equal. For test failure messages.
std::string describe_difference(const Fingerprint& before, const Fingerprint& after,
                                std::size_t limit = 20);

}  // namespace venvfix::txn
