#include "apply/load_chain.hpp"

#include <algorithm>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/process.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/elf/elf_file.hpp"

namespace venvfix::apply::detail {

namespace {

// The path a line of `ld.so --list` names ("\tsoname => /path (0x…)" or "\t/path (0x…)"); empty
// for a line without one (the vDSO); nullopt for "soname => not found".
std::optional<std::string> listed_path(std::string_view line) {
  constexpr std::string_view k_arrow = " => ";
  if (auto arrow = line.find(k_arrow); arrow != std::string_view::npos) {
    line = line.substr(arrow + k_arrow.size());
    if (line.starts_with("not found")) return std::nullopt;
  } else {
    line = trim(line);
    if (!line.starts_with('/')) return std::string();
  }
  const auto address = line.rfind(" (");
  return std::string(address == std::string_view::npos ? line : line.substr(0, address));
}

}  // namespace

std::optional<InodeKey> inode_key(const std::string& path) {
  auto identity = file_identity_follow(path);
  if (!identity) return std::nullopt;
  return InodeKey{identity->device, identity->inode};
}

fs::path running_loader() {
  auto info = elf::read_elf("/proc/self/exe");
  if (!info || !*info) return {};
  return (*info)->interpreter;
}

Closure loader_closure(const fs::path& loader, const std::string& file) {
  ProcessOptions options;
  options.environment = std::nullopt;  // the helper's, already clean
  options.timeout_ms = 30'000;
  options.max_output = 1u << 20;
  auto outcome = run_process({loader.string(), "--list", file}, options);
  if (!outcome || outcome->exit_code != 0) return std::nullopt;
  std::set<InodeKey> closure;
  const std::optional<InodeKey> self = inode_key(file);
  for (std::string_view line : split(outcome->out, '\n')) {
    std::optional<std::string> path = listed_path(line);
    if (!path) return std::nullopt;
    if (path->empty()) continue;
    std::optional<InodeKey> id = inode_key(*path);
    if (!id) return std::nullopt;
    if (id != self) closure.insert(*id);
  }
  return closure;
}

std::vector<std::size_t> chain_bases(std::span<const std::optional<InodeKey>> identities,
                                     std::span<const Closure> closures) {
  std::vector<std::size_t> bases(closures.size(), k_own_process);
  for (std::size_t y = 0; y < closures.size(); ++y) {
    if (!closures[y]) continue;
    for (std::size_t x = 0; x < closures.size(); ++x) {
      if (x == y || !closures[x] || !identities[x] || !closures[y]->contains(*identities[x]) ||
          !std::includes(closures[y]->begin(), closures[y]->end(), closures[x]->begin(),
                         closures[x]->end())) {
        continue;
      }
      // X's closure is a strict part of Y's (it lacks X, which Y's holds): no cycle can form.
      if (bases[y] == k_own_process || closures[x]->size() > closures[bases[y]]->size()) {
        bases[y] = x;
      }
    }
  }
  return bases;
}

}  // namespace venvfix::apply::detail
