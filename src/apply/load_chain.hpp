// Which library of the load check may be loaded in the process of another: libcublas.so.13
// needs libcublasLt.so.13, whose constructors take about half a CPU-second; checked in three
// processes of their own, cuBLAS's three libraries ran them three times. A file Y is loaded in
// a process forked from the one that has just loaded X only where the real loader says that
// Y's own search finds X and every file X loads (`ld.so --list`, or its trace mode as the load
// verdicts' keys run it, in the helper's clean environment). That process then holds nothing Y's
// own search would not have loaded, so what it proves is what a process of Y's own would prove: the
// same files mapped, relocated and initialised, in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace venvfix::apply::detail {

namespace fs = std::filesystem;

inline constexpr std::size_t k_own_process = std::numeric_limits<std::size_t>::max();

// Which file a path is: (device, inode) of venvfix::file_identity_follow. Ordered, for sets.
using InodeKey = std::pair<std::uint64_t, std::uint64_t>;
// nullopt when the path cannot be stat'ed.
std::optional<InodeKey> inode_key(const std::string& path);

// The files `ld.so --list FILE` says FILE loads (the interpreter included, FILE itself not);
// nullopt when it cannot tell (a dependency not found, the loader failed).
using Closure = std::optional<std::set<InodeKey>>;

// The dynamic loader this process runs under (its PT_INTERP); empty when it cannot be read.
fs::path running_loader();
// The same for another binary.
fs::path loader_of(const fs::path& binary);

// One file of the loader's listing: the name it was asked for (a soname, or the path), and the
// path it found (nullopt: "not found").
struct ListedObject {
  std::string name;
  std::optional<std::string> path;
};
enum class WhenMissing {
  fail,  // `loader --list file`: nullopt when a dependency is not found
  list,  // the loader in trace mode (LD_TRACE_LOADED_OBJECTS=1, as ldd): listed as not found
};
// What the loader lists for `file`, in its order (the vDSO left out); nullopt when it cannot
// tell (the loader failed). `environment`: the whole environment of the loader; nullopt: this
// process's (its clean_environment() in trace mode).
std::optional<std::vector<ListedObject>> loader_list(
    const fs::path& loader, const std::string& file,
    const std::optional<std::vector<std::string>>& environment, WhenMissing when_missing);

// `loader --list file`, read into a closure.
Closure loader_closure(const fs::path& loader, const std::string& file);

// For each file, the index of the file in whose process it is loaded, or k_own_process. Y is
// based on X when X is in Y's closure and X's closure is part of Y's; of several such X, the one
// with the largest closure (the latest loaded), the first one on a tie. `identities`: each
// file's own key (nullopt: unknown, never chained).
std::vector<std::size_t> chain_bases(std::span<const std::optional<InodeKey>> identities,
                                     std::span<const Closure> closures);

}  // namespace venvfix::apply::detail
