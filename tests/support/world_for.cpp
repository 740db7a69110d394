#include "support/world_for.hpp"

#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>

#include "support/paths.hpp"

namespace venvfix::testing {

namespace {

fs::path world_script() {
  return source_dir() / "tests" / "world" / "world.py";
}

fs::path cache_for(const fs::path& python) {
  const std::string suffix = "-" + python.filename().string();
  if (const char* env = std::getenv("VENVFIX_WORLD_CACHE"); env != nullptr && *env != '\0') {
    return fs::path(std::string(env) + suffix);
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return fs::temp_directory_path() / ("venvfix-test-world" + suffix);
  return exe.parent_path() / ("test-world" + suffix);
}

}  // namespace

fs::path pyenv_python(std::string_view version) {
  const char* root = std::getenv("PYENV_ROOT");
  const fs::path versions =
      fs::path(root != nullptr && *root != '\0' ? root : "/root/.pyenv") / "versions";
  fs::path best;
  std::error_code ec;
  for (fs::directory_iterator it(versions, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(std::string(version) + ".")) continue;
    fs::path python = it->path() / "bin" / ("python" + std::string(version));
    if (fs::exists(python) && (best.empty() || python > best)) best = python;
  }
  return best;
}

const World& test_world_for(const fs::path& python) {
  static std::mutex mutex;
  static std::map<fs::path, World> worlds;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = worlds.find(python); it != worlds.end()) return it->second;
  const fs::path root = cache_for(python);
  const CommandResult r =
      run_command({python.string(), world_script().string(), "build", "--out", root.string()});
  if (r.exit_code != 0) {
    throw std::runtime_error("test world build by " + python.string() + " failed (exit " +
                             std::to_string(r.exit_code) + ") in " + root.string() + ":\n" + r.err);
  }
  World world;
  world.root = fs::canonical(root);
  world.index_dir = world.root / "index";
  world.wheels_dir = world.index_dir / "files";
  world.hermetic_cache = world.root / "hermetic" / "ld.so.cache";
  return worlds.emplace(python, world).first->second;
}

fs::path make_scenario_for(const fs::path& python, std::string_view name,
                           const fs::path& dest_parent) {
  const World& world = test_world_for(python);
  fs::path dest = dest_parent / std::string(name);
  for (int n = 2; fs::exists(dest); ++n) {
    dest = dest_parent / (std::string(name) + "-" + std::to_string(n));
  }
  const CommandResult r =
      run_command({python.string(), world_script().string(), "scenario", std::string(name),
                   "--world", world.root.string(), "--out", dest.string()});
  if (r.exit_code != 0) {
    throw std::runtime_error("test world scenario " + std::string(name) + " by " + python.string() +
                             " failed (exit " + std::to_string(r.exit_code) + "):\n" + r.err);
  }
  return dest;
}

}  // namespace venvfix::testing
