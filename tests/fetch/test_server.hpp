// Starts one of the Python servers of tests/servers on 127.0.0.1 for the duration of a test:
// the server binds port 0 and prints the port it got as its first line; the destructor stops
// it. Also small helpers the fetch and index tests share.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/paths.hpp"
#include "venvfix/base/sha256.hpp"

extern char** environ;

namespace venvfix::testing {

namespace fs = std::filesystem;

inline fs::path server_script(const char* name) {
  return venvfix::testing::source_dir() / "tests" / "servers" / name;
}

class TestServer {
 public:
  // `script`: "index_server.py" or "fault_server.py"; `arguments` follow --root.
  TestServer(const char* script, const fs::path& root, std::vector<std::string> arguments = {}) {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return;
    std::vector<std::string> argv_text = {"python3", server_script(script).string(), "--root",
                                          root.string()};
    argv_text.insert(argv_text.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    argv.reserve(argv_text.size() + 1);
    for (std::string& item : argv_text) argv.push_back(item.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    int spawned = posix_spawnp(&m_pid, "python3", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_fds[1]);
    m_stdout = pipe_fds[0];
    if (spawned != 0) m_pid = -1;
  }
  ~TestServer() {
    if (m_pid > 0) {
      ::kill(m_pid, SIGTERM);
      int status = 0;
      ::waitpid(m_pid, &status, 0);
    }
    if (m_stdout >= 0) ::close(m_stdout);
  }
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  // Waits (once) for the port line, so several servers can start at the same time.
  bool running() {
    wait_for_port();
    return m_pid > 0 && m_port > 0;
  }
  int port() {
    wait_for_port();
    return m_port;
  }
  std::string url(std::string_view path = "/") {
    return "http://127.0.0.1:" + std::to_string(port()) + std::string(path);
  }

 private:
  void wait_for_port() {
    if (m_port != 0 || m_pid <= 0) return;
    // The first line is the port; a loaded machine may need seconds to start an interpreter.
    std::string line;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd fd{m_stdout, POLLIN, 0};
      if (::poll(&fd, 1, 100) <= 0) continue;
      char buffer[64];
      ssize_t got = ::read(m_stdout, buffer, sizeof buffer);
      if (got <= 0) break;
      line.append(buffer, static_cast<std::size_t>(got));
    }
    m_port = std::atoi(line.c_str());
    if (m_port <= 0) m_port = -1;
  }

  pid_t m_pid = -1;
  int m_stdout = -1;
  int m_port = 0;
};

// Writes `size` pseudo-random bytes (seeded, so reruns produce the same file) and returns
// their sha256 in hex.
// Sizes of test files: `300 * k_kib` multiplies in std::size_t, not int.
inline constexpr std::size_t k_kib = 1024;

inline std::string write_random_file(const fs::path& path, std::size_t size, unsigned seed) {
  std::string data(size, '\0');
  std::uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (std::size_t i = 0; i < size; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    data[i] = static_cast<char>(state & 0xFF);
  }
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(size));
  return to_hex(sha256(data));
}

inline void write_text(const fs::path& path, std::string_view text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary)
      .write(text.data(), static_cast<std::streamsize>(text.size()));
}

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Regular files under `dir` (recursively); 0 when it does not exist.
inline std::size_t count_files(const fs::path& dir) {
  std::error_code error;
  if (!fs::exists(dir, error)) return 0;
  std::size_t count = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) ++count;
  }
  return count;
}

}  // namespace venvfix::testing
