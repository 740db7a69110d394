// run_process: fork, set the child up (process group, stdio, mount namespace), exec, and read
// its pipes until every writer closed or the time limit passed.
#include "venvfix/base/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "venvfix/base/fs.hpp"

extern char** environ;

namespace venvfix {

namespace {

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

struct Pipe {
  Fd read;
  Fd write;
};

Result<Pipe> make_pipe(const std::string& command) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return make_error(ExitCode::error, "cannot run {}: pipe: {}", command, errno_message(errno));
  }
  return Pipe{Fd(fds[0]), Fd(fds[1])};
}

// What the child reports on the status pipe when a step before exec fails.
struct SetupFailure {
  int step = 0;  // index into k_steps
  int error = 0;
};
constexpr const char* k_steps[] = {"exec", "unshare", "mount --make-rprivate /", "mount --bind"};

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void child_setup(char** argv, char** envp, const Pipe& status, int out_fd, int err_fd,
                              int result_fd, const std::vector<std::pair<char*, char*>>& mounts) {
  auto fail = [&](int step) {
    SetupFailure failure{step, errno};
    (void)!::write(status.write.get(), &failure, sizeof failure);
    ::_exit(127);
  };
  ::setpgid(0, 0);
  if (!mounts.empty()) {
    if (::unshare(CLONE_NEWNS) != 0) fail(1);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) fail(2);
    for (const auto& [source, target] : mounts) {
      if (::mount(source, target, nullptr, MS_BIND, nullptr) != 0) fail(3);
    }
  }
  ::dup2(out_fd, STDOUT_FILENO);  // dup2 clears O_CLOEXEC on the copy
  ::dup2(err_fd, STDERR_FILENO);
  if (result_fd == 3) {
    ::fcntl(3, F_SETFD, 0);
  } else if (result_fd >= 0) {
    ::dup2(result_fd, 3);
  }
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
  ::execvpe(argv[0], argv, envp);
  fail(0);
  ::_exit(127);  // not reached: fail exits
}

void keep_tail(std::string& text, std::size_t max) {
  if (text.size() > max) text.erase(0, text.size() - max);
}

// Reads every stream until all are closed or the deadline passes; true when it passed.
bool drain(std::vector<std::pair<Fd*, std::string*>> streams, int timeout_ms, std::size_t max) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buffer[1 << 14];
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < streams.size(); ++i) {
      if (streams[i].first->valid()) {
        fds.push_back({streams[i].first->get(), POLLIN, 0});
        which.push_back(i);
      }
    }
    if (fds.empty()) return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return true;
    int ready = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (ready <= 0) continue;  // EINTR or the deadline: the loop checks again
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      auto& [fd, text] = streams[which[k]];
      ssize_t n = ::read(fd->get(), buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        *fd = Fd();  // every writer closed this stream
        continue;
      }
      text->append(buffer, static_cast<std::size_t>(n));
      if (text->size() > 2 * max) keep_tail(*text, max);
    }
  }
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

std::optional<std::string> environment_value(const std::vector<std::string>& environment,
                                             std::string_view key) {
  for (const std::string& entry : environment) {
    if (entry.size() > key.size() && entry.compare(0, key.size(), key) == 0 &&
        entry[key.size()] == '=') {
      return entry.substr(key.size() + 1);
    }
  }
  return std::nullopt;
}

Result<ProcessOutcome> run_process(const std::vector<std::string>& argv,
                                   const ProcessOptions& options) {
  if (argv.empty()) return make_error(ExitCode::error, "no command to run");
  const std::string& name = argv.front();
  VENVFIX_TRY_ASSIGN(Pipe out, make_pipe(name));
  VENVFIX_TRY_ASSIGN(Pipe err, make_pipe(name));
  VENVFIX_TRY_ASSIGN(Pipe status, make_pipe(name));
  std::optional<Pipe> result;
  if (options.result_pipe) {
    VENVFIX_TRY_ASSIGN(Pipe made, make_pipe(name));
    result.emplace(std::move(made));
  }
  // Everything the child touches is prepared before fork.
  std::vector<std::string> args = argv;
  std::vector<std::string> env = options.environment.value_or(std::vector<std::string>{});
  std::vector<char*> c_args = c_strings(args);
  std::vector<char*> c_env = c_strings(env);
  char** envp = options.environment ? c_env.data() : environ;
  std::vector<std::string> mount_paths;
  for (const BindMount& mount : options.bind_mounts) {
    mount_paths.push_back(mount.source.string());
    mount_paths.push_back(mount.target.string());
  }
  std::vector<std::pair<char*, char*>> mounts;
  for (std::size_t i = 0; i + 1 < mount_paths.size(); i += 2) {
    mounts.emplace_back(mount_paths[i].data(), mount_paths[i + 1].data());
  }
  const int err_fd = options.merge_stderr == MergeStderr::yes ? out.write.get() : err.write.get();

  const pid_t pid = ::fork();
  if (pid < 0)
    return make_error(ExitCode::error, "cannot run {}: fork: {}", name, errno_message(errno));
  if (pid == 0) {
    child_setup(c_args.data(), envp, status, out.write.get(), err_fd,
                result ? result->write.get() : -1, mounts);
  }
  ::setpgid(pid, pid);  // also from here: no race with the kill below
  out.write = Fd();
  err.write = Fd();
  status.write = Fd();
  if (result) result->write = Fd();

  SetupFailure failure;
  ssize_t got;
  do {
    got = ::read(status.read.get(), &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof failure)) {
    int wait_status = 0;
    while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
    std::string message = fmt::format("cannot run {}: {}: {}", name, k_steps[failure.step],
                                      errno_message(failure.error));
    if (failure.step != 0) return Error{ExitCode::error, std::move(message)};
    ProcessOutcome outcome;  // exec failed: status 127, as a shell reports it
    outcome.exit_code = 127;
    (options.merge_stderr == MergeStderr::yes ? outcome.out : outcome.err) = message + "\n";
    return outcome;
  }

  ProcessOutcome outcome;
  std::vector<std::pair<Fd*, std::string*>> streams = {{&out.read, &outcome.out},
                                                       {&err.read, &outcome.err}};
  if (result) streams.emplace_back(&result->read, &outcome.result);
  outcome.timed_out = drain(streams, options.timeout_ms, options.max_output);
  if (outcome.timed_out) ::kill(-pid, SIGKILL);
  int wait_status = 0;
  while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  keep_tail(outcome.out, options.max_output);
  keep_tail(outcome.err, options.max_output);
  keep_tail(outcome.result, options.max_output);
  if (WIFEXITED(wait_status)) {
    outcome.exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    outcome.signal = WTERMSIG(wait_status);
    outcome.exit_code = 128 + outcome.signal;
  }
  return outcome;
}

}  // namespace venvfix
