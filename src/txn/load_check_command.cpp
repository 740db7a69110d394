// run_with_timeout and clean_environment: child processes with a time limit.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "venvfix/base/fs.hpp"
#include "venvfix/txn/load_check.hpp"

extern char** environ;

namespace venvfix::txn {

namespace {

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<std::string> clean_environment() {
  static constexpr std::string_view k_dropped[] = {"LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT",
                                                   "PYTHONPATH", "PYTHONHOME"};
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    std::string_view key = text.substr(0, text.find('='));
    if (std::find(std::begin(k_dropped), std::end(k_dropped), key) != std::end(k_dropped)) {
      continue;
    }
    out.emplace_back(text);
  }
  return out;
}

Result<CommandOutcome> run_with_timeout(const std::vector<std::string>& argv,
                                        const std::optional<std::vector<std::string>>& environment,
                                        int timeout_seconds, std::size_t max_output) {
  if (argv.empty()) return make_error(ExitCode::error, "no command to run");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return make_error(ExitCode::error, "cannot run {}: pipe: {}", argv[0], errno_message(errno));
  }
  Fd read_end(pipe_fds[0]);
  Fd write_end(pipe_fds[1]);
  std::vector<std::string> args = argv;
  std::vector<std::string> env;
  if (environment) env = *environment;
  std::vector<char*> c_args = c_strings(args);
  std::vector<char*> c_env = c_strings(env);
  char** envp = environment ? c_env.data() : environ;

  const pid_t pid = ::fork();
  if (pid < 0) {
    return make_error(ExitCode::error, "cannot run {}: fork: {}", argv[0], errno_message(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(write_end.get(), STDOUT_FILENO);
    ::dup2(write_end.get(), STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::execvpe(c_args[0], c_args.data(), envp);
    const std::string message = "cannot run " + args[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(STDERR_FILENO, message.data(), message.size());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from here: no race with the kill below
  write_end = Fd();

  CommandOutcome outcome;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  char buffer[1 << 14];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      outcome.timed_out = true;
      break;
    }
    pollfd fd{read_end.get(), POLLIN, 0};
    int ready = ::poll(&fd, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    ssize_t n = ::read(read_end.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // every writer closed: the command (and its children) are done
    outcome.output.append(buffer, static_cast<std::size_t>(n));
    if (outcome.output.size() > 2 * max_output) {
      outcome.output.erase(0, outcome.output.size() - max_output);
    }
  }
  if (outcome.timed_out) ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (outcome.output.size() > max_output) {
    outcome.output.erase(0, outcome.output.size() - max_output);
  }
  if (WIFEXITED(status)) {
    outcome.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    outcome.exit_code = 128 + WTERMSIG(status);
  }
  return outcome;
}

}  // namespace venvfix::txn
