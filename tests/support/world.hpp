// Access to venvfix's test world (tests/world/, docs/test-world.md) from GoogleTest tests:
// real ELF libraries, real wheels, a local PEP 503/691 index, and pip-made scenario venvs.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace venvfix::testing {

namespace fs = std::filesystem;

struct World {
  fs::path root;            // the world directory (cached between test runs)
  fs::path index_dir;       // root/index: serve it with IndexServer; simple/ and files/ inside
  fs::path wheels_dir;      // root/index/files: every wheel, with its PEP 658 .metadata beside it
  fs::path hermetic_cache;  // an ld.so.cache of the standard directories only (no host CUDA)
};

// Builds the world once per process (and reuses it across runs: $VENVFIX_WORLD_CACHE, else
// <directory of the test binary>/test-world) by running
// `python3 $VENVFIX_SOURCE_DIR/tests/world/world.py build`. On failure it throws
// std::runtime_error carrying the generator's stderr, which fails the calling test.
const World& test_world();

// A fresh, writable copy of scenario `name` (healthy, seed, clobbered, cuda-mix, killed-install,
// no-pip, split-lib64, torch211-cu130, all-nvidia-removed) at dest_parent/name (or
// dest_parent/name-N when taken). Templates are built once and cached in the world directory.
// Call pip in the copy as `<venv>/bin/python -m pip` (console-script shebangs name the template).
// Throws std::runtime_error with the generator's stderr on failure.
fs::path make_scenario(std::string_view name, const fs::path& dest_parent);

// A pure-Python wheel of `name` and `version` holding one module, `name`.py, which says its
// version (VERSION = '…'), written into `dir` by the world's wheel writer
// (tests/world/wheelgen.py). Its path; throws std::runtime_error with the writer's stderr.
fs::path make_module_wheel(const std::string& name, const std::string& version,
                           const fs::path& dir);

// The path of tests/world/hermetic_run.sh; true when this process may use it (root, unshare).
fs::path hermetic_runner();
bool hermetic_available();

struct CommandResult {
  int exit_code = -1;  // the exit status; 128+N when killed by signal N; -1 when not started
  std::string out;
  std::string err;
};

// Runs argv (argv[0] looked up in PATH) with the environment plus extra_env, capturing stdout
// and stderr. A command still running after timeout_seconds is killed (SIGKILL to its process
// group) and reported with exit_code 137 and a note in err.
CommandResult run_command(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& extra_env = {},
                          int timeout_seconds = 600);

// tests/world/index_server.py on 127.0.0.1, stopped (SIGTERM, then waited for) on destruction.
class IndexServer {
 public:
  // Throws std::runtime_error when the server does not start.
  static IndexServer start(const fs::path& root);
  IndexServer(IndexServer&& other) noexcept;
  IndexServer& operator=(IndexServer&&) = delete;
  IndexServer(const IndexServer&) = delete;
  IndexServer& operator=(const IndexServer&) = delete;
  ~IndexServer();

  std::string url() const;  // http://127.0.0.1:PORT/simple
  int port() const { return m_port; }

 private:
  IndexServer(int pid, int port) : m_pid(pid), m_port(port) {}
  int m_pid = -1;
  int m_port = 0;
};

}  // namespace venvfix::testing
