#include "loader_help.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/process.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::elf::detail {

namespace {

enum class Section { none, search_path, glibc_hwcaps, legacy };

}  // namespace

LoaderHelp parse_loader_help(std::string_view text) {
  LoaderHelp help;
  Section section = Section::none;
  for (std::string_view raw : split(text, '\n')) {
    if (raw.empty()) continue;
    if (raw.front() != ' ' && raw.front() != '\t') {
      if (raw.starts_with("Shared library search path")) {
        section = Section::search_path;
      } else if (raw.starts_with("Subdirectories of glibc-hwcaps directories")) {
        section = Section::glibc_hwcaps;
      } else if (raw.starts_with("Legacy HWCAP subdirectories")) {
        section = Section::legacy;
      } else {
        section = Section::none;
      }
      continue;
    }
    std::string_view line = trim(raw);
    std::string_view name = line.substr(0, line.find(' '));
    std::string_view note;
    if (auto open = line.find('('); open != std::string_view::npos) note = line.substr(open);
    switch (section) {
      case Section::search_path:
        if (note.find("system search path") != std::string_view::npos) {
          help.system_dirs.emplace_back(name);
        }
        break;
      case Section::glibc_hwcaps:
        if (note.find("searched") != std::string_view::npos) help.glibc_hwcaps.emplace_back(name);
        break;
      case Section::legacy:
        if (note.find("searched") == std::string_view::npos) break;
        if (note.find("AT_PLATFORM") != std::string_view::npos) {
          help.legacy_platform = std::string(name);
        } else if (name == "tls") {
          help.legacy_tls = true;
        } else {
          help.legacy_hwcaps.emplace_back(name);
        }
        break;
      case Section::none:
        break;
    }
  }
  return help;
}

std::vector<std::string> legacy_subdirs(const LoaderHelp& help) {
  // glibc builds temp[] = hwcap names (ascending bit), platform, "tls" and emits every subset,
  // joined from the last element to the first, counting down from the full set. --help prints
  // the hwcap names from the highest bit down (elf/dl-usage.c), which is already that order.
  std::vector<std::string> items;  // most significant first: tls, platform, hwcaps as printed
  if (help.legacy_tls) items.emplace_back("tls");
  if (!help.legacy_platform.empty()) items.push_back(help.legacy_platform);
  items.insert(items.end(), help.legacy_hwcaps.begin(), help.legacy_hwcaps.end());
  std::vector<std::string> result;
  if (items.empty() || items.size() > 16) return result;
  const std::size_t count = items.size();
  for (std::size_t mask = (std::size_t{1} << count) - 1; mask > 0; --mask) {
    std::string subdir;
    for (std::size_t i = 0; i < count; ++i) {
      if ((mask & (std::size_t{1} << (count - 1 - i))) == 0) continue;
      if (!subdir.empty()) subdir += '/';
      subdir += items[i];
    }
    result.push_back(std::move(subdir));
  }
  return result;
}

std::optional<std::string> run_loader_help(const std::filesystem::path& interpreter,
                                           std::string* not_started) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    if (not_started != nullptr) *not_started = "pipe: " + errno_message(errno);
    return std::nullopt;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::string program = interpreter.string();
  std::string flag = "--help";
  char* argv[] = {program.data(), flag.data(), nullptr};
  char* envp[] = {nullptr};
  pid_t pid = 0;
  const int rc = start_when_allowed(
      [&] { return ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, envp); });
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    if (not_started != nullptr) *not_started = "posix_spawn: " + errno_message(rc);
    return std::nullopt;
  }
  std::string output;
  char buffer[4096];
  // Bounded: ld.so --help prints about 1 KiB at once; give up after 5 s or 1 MiB.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    pollfd pfd{pipe_fds[0], POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    int ready = left.count() > 0 ? ::poll(&pfd, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      ::kill(pid, SIGKILL);
      break;
    }
    ssize_t got = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    output.append(buffer, static_cast<std::size_t>(got));
    if (output.size() > (1u << 20)) {
      ::kill(pid, SIGKILL);
      break;
    }
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return output;
}

}  // namespace venvfix::elf::detail
