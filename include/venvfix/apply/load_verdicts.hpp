// Kept load verdicts: a re-apply from the unpacked-wheel cache installs the very bytes an
// earlier load check proved loadable, and loading libcublasLt.so.13 again costs a third of a
// second. A verdict (loaded, needs-python) is kept under the download cache, keyed by
// everything the real loader's answer depends on that venvfix can name:
// - the file's path (relative to the venv), and each file the real loader says it loads now
//   (its trace mode, as ldd's, in the load check's clean environment: the search is asked again
//   every time, only the loading is not), each by its content where staging checked it against
//   RECORD (a hard link from the unpacked cache moves an inode's ctime without changing a
//   byte), else by its identity (device, inode, size, mtime, ctime); a dependency not found as
//   such (a preload may provide it);
// - the same for every preloaded file, in order;
// - the helper binary, the loader, /etc/ld.so.cache and /etc/ld.so.preload (identities; ldconfig
//   replaces the cache when a driver is installed), the filesystem flags of every file (noexec),
//   the CPU (auxv capabilities and platform; vendor, model and flags), the kernel release, and a
//   digest of the clean environment the child gets.
// Failures are never kept. What the key cannot name is trusted from the earlier check: a
// constructor whose outcome depends on something else (a device, the time).
// `apply --recheck-loads` loads every file again. The least recently used verdicts beyond
// LoadVerdictOptions::keep_at_most are removed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "venvfix/apply/load_check.hpp"
#include "venvfix/base/sha256.hpp"

namespace venvfix::apply {

namespace fs = std::filesystem;

// A file's content as staging checked it: (device, inode) after the moves → (sha256, size).
using KnownContents =
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::pair<Sha256Digest, std::uint64_t>>;

struct LoadVerdictOptions {
  fs::path dir;       // where verdicts are kept (<download cache>/load-verdicts-v1); empty: none
  bool reuse = true;  // false (--recheck-loads): load everything, and keep the new verdicts
  KnownContents known;
  // Paths inside it are keyed relative to it: the same bytes installed into another venv (of a
  // fleet, or a copy) keep their verdict where everything else holds. Empty: absolute paths.
  fs::path venv_root;
  // Verdicts kept in `dir` at most (a few hundred bytes each): a check that keeps a new one
  // removes the least recently taken or written beyond it.
  std::size_t keep_at_most = 4096;
};

// The key of each file (nullopt: the loader cannot list it, or the helper's loader is unknown),
// as text; `options.preload` and `options.helper` as dlopen_in_child uses them.
std::vector<std::optional<std::string>> load_verdict_keys(std::span<const fs::path> files,
                                                          const LoadCheckOptions& options,
                                                          const LoadVerdictOptions& verdicts);

// dlopen_in_child for the files without a kept verdict; the others' results are the kept ones,
// with `proven_at` set. Keeps the new verdicts of the files that loaded (never fails for that).
Result<std::vector<LoadResult>> dlopen_keeping_verdicts(std::span<const fs::path> files,
                                                        const manifest::Manifests& manifests,
                                                        const LoadCheckOptions& options,
                                                        const LoadVerdictOptions& verdicts);

}  // namespace venvfix::apply
