// Helpers for the env and dist tests: run a shell command, write files, make real venvs.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace venvfix::test_support {

namespace fs = std::filesystem;

struct CommandOutput {
  int status = -1;  // exit status, -1 when it did not exit normally
  std::string out;  // stdout (stderr is passed through to the test's stderr)
};

inline CommandOutput run_command(const std::string& command) {
  CommandOutput result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

inline std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

inline void write_text(const fs::path& path, std::string_view text) {
  fs::create_directories(path.parent_path());
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(text.data(), static_cast<std::streamsize>(text.size()));
  ASSERT_TRUE(file.good()) << path;
}

inline std::string host_python_minor() {
  auto out = run_command("python3 -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])'");
  while (!out.out.empty() && out.out.back() == '\n') out.out.pop_back();
  return out.out;
}

// Makes a venv with the machine's python3 (`python3 -m venv`), without pip unless asked.
enum class WithPip { no, yes };
inline bool make_venv(const fs::path& where, WithPip pip = WithPip::no) {
  std::string command = "python3 -m venv ";
  if (pip == WithPip::no) command += "--without-pip ";
  command += shell_quote(where.string()) + " >&2";
  return run_command(command).status == 0;
}

}  // namespace venvfix::test_support
