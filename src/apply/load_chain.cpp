#include "apply/load_chain.hpp"

#include <algorithm>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/process.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/elf/elf_file.hpp"

namespace venvfix::apply::detail {

namespace {

// One line of the loader's listing ("\tsoname => /path (0x…)", "\tsoname => not found" or
// "\t/path (0x…)"); nullopt for a line without a file (the vDSO).
std::optional<ListedObject> listed_object(std::string_view line) {
  constexpr std::string_view k_arrow = " => ";
  ListedObject object;
  if (auto arrow = line.find(k_arrow); arrow != std::string_view::npos) {
    object.name = std::string(trim(line.substr(0, arrow)));
    line = line.substr(arrow + k_arrow.size());
    if (line.starts_with("not found")) return object;
  } else {
    line = trim(line);
    if (!line.starts_with('/')) return std::nullopt;
  }
  const auto address = line.rfind(" (");
  object.path = std::string(address == std::string_view::npos ? line : line.substr(0, address));
  if (object.name.empty()) object.name = *object.path;
  return object;
}

}  // namespace

std::optional<InodeKey> inode_key(const std::string& path) {
  auto identity = file_identity_follow(path);
  if (!identity) return std::nullopt;
  return InodeKey{identity->device, identity->inode};
}

fs::path running_loader() {
  return loader_of("/proc/self/exe");
}

fs::path loader_of(const fs::path& binary) {
  auto info = elf::read_elf(binary);
  if (!info || !*info) return {};
  return (*info)->interpreter;
}

std::optional<std::vector<ListedObject>> loader_list(
    const fs::path& loader, const std::string& file,
    const std::optional<std::vector<std::string>>& environment, WhenMissing when_missing) {
  ProcessOptions options;
  options.environment = environment;
  options.timeout_ms = 30'000;
  options.max_output = 1u << 20;
  std::vector<std::string> argv = {loader.string(), "--list", file};
  if (when_missing == WhenMissing::list) {
    // ldd's way: the loader in trace mode lists a dependency it cannot find and goes on, where
    // --list stops.
    argv = {loader.string(), file};
    if (!options.environment) options.environment = clean_environment();
    options.environment->push_back("LD_TRACE_LOADED_OBJECTS=1");
  }
  auto outcome = run_process(argv, options);
  if (!outcome || outcome->exit_code != 0) return std::nullopt;
  std::vector<ListedObject> objects;
  for (std::string_view line : split(outcome->out, '\n')) {
    std::optional<ListedObject> object = listed_object(line);
    if (!object) continue;
    if (!object->path && when_missing == WhenMissing::fail) return std::nullopt;
    objects.push_back(std::move(*object));
  }
  return objects;
}

Closure loader_closure(const fs::path& loader, const std::string& file) {
  // The helper's environment, already clean.
  std::optional<std::vector<ListedObject>> objects =
      loader_list(loader, file, std::nullopt, WhenMissing::fail);
  if (!objects) return std::nullopt;
  std::set<InodeKey> closure;
  const std::optional<InodeKey> self = inode_key(file);
  for (const ListedObject& object : *objects) {
    std::optional<InodeKey> id = inode_key(*object.path);
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
