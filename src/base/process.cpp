// run_process: fork, set the child up (process group, stdio, mount namespace, signals), exec,
// read its pipes until every writer closed, and wait for it until the time limit passed.
#include "venvfix/base/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <spdlog/spdlog.h>

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

// --- signal forwarding (ForwardSignals::yes) ---------------------------------------------------

constexpr int k_forwarded[] = {SIGINT, SIGTERM};
volatile sig_atomic_t g_forward_to = 0;       // the child's pid while one runs
volatile sig_atomic_t g_child_own_group = 0;  // 1: a terminal's signals do not reach it

extern "C" void forward_signal(int signal, siginfo_t* info, void*) {
  const pid_t child = g_forward_to;
  if (child <= 0) return;
  // A terminal's Ctrl-C (si_code SI_KERNEL) reached the child already when it shares our group.
  if (info != nullptr && info->si_code == SI_KERNEL && !g_child_own_group) return;
  ::kill(child, signal);
}

// Installed before fork with the signals blocked, so none is lost between fork and the pid
// being known; the child puts the old dispositions back before exec.
class SignalForwarding {
 public:
  explicit SignalForwarding(bool own_group) {
    sigset_t set;
    sigemptyset(&set);
    for (int signal : k_forwarded) sigaddset(&set, signal);
    ::pthread_sigmask(SIG_BLOCK, &set, &m_old_mask);
    g_child_own_group = own_group ? 1 : 0;
    struct sigaction action {};
    action.sa_sigaction = forward_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < std::size(k_forwarded); ++i) {
      ::sigaction(k_forwarded[i], &action, &m_old[i]);
    }
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGQUIT, &ignore, &m_old_quit);
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;
  ~SignalForwarding() {
    g_forward_to = 0;
    for (std::size_t i = 0; i < std::size(k_forwarded); ++i) {
      ::sigaction(k_forwarded[i], &m_old[i], nullptr);
    }
    ::sigaction(SIGQUIT, &m_old_quit, nullptr);
    ::pthread_sigmask(SIG_SETMASK, &m_old_mask, nullptr);
  }
  // In the parent, once the child's pid is known: pending signals go to the child now.
  void started(pid_t child) {
    g_forward_to = child;
    ::pthread_sigmask(SIG_SETMASK, &m_old_mask, nullptr);
  }
  // In the child, before exec (async-signal-safe).
  void restore_in_child() const {
    for (std::size_t i = 0; i < std::size(k_forwarded); ++i) {
      ::sigaction(k_forwarded[i], &m_old[i], nullptr);
    }
    ::sigaction(SIGQUIT, &m_old_quit, nullptr);
    ::pthread_sigmask(SIG_SETMASK, &m_old_mask, nullptr);
  }

 private:
  sigset_t m_old_mask{};
  struct sigaction m_old[std::size(k_forwarded)]{};
  struct sigaction m_old_quit {};
};

// --- the child ---------------------------------------------------------------------------------

// Everything the child touches, prepared before fork.
struct ChildPlan {
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::vector<char*> c_args;
  std::vector<char*> c_env;
  char** envp = nullptr;
  std::vector<std::string> mount_paths;
  std::vector<std::pair<char*, char*>> mounts;
  bool capture = true;
  int out_fd = -1;  // capture: the write ends of the pipes
  int err_fd = -1;
  int result_fd = -1;
  int status_fd = -1;
  int inherit_fd = -1;
  const SignalForwarding* signals = nullptr;
};

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void child_setup(const ChildPlan& plan) {
  auto fail = [&](int step) {
    SetupFailure failure{step, errno};
    (void)!::write(plan.status_fd, &failure, sizeof failure);
    ::_exit(127);
  };
  if (plan.capture) ::setpgid(0, 0);
  if (plan.signals != nullptr) plan.signals->restore_in_child();
  if (!plan.mounts.empty()) {
    if (::unshare(CLONE_NEWNS) != 0) fail(1);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) fail(2);
    for (const auto& [source, target] : plan.mounts) {
      if (::mount(source, target, nullptr, MS_BIND, nullptr) != 0) fail(3);
    }
  }
  if (plan.capture) {
    ::dup2(plan.out_fd, STDOUT_FILENO);  // dup2 clears O_CLOEXEC on the copy
    ::dup2(plan.err_fd, STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
  }
  if (plan.result_fd == 3) {
    ::fcntl(3, F_SETFD, 0);
  } else if (plan.result_fd >= 0) {
    ::dup2(plan.result_fd, 3);
  }
  if (plan.inherit_fd >= 0) ::fcntl(plan.inherit_fd, F_SETFD, 0);
  ::execvpe(plan.c_args[0], plan.c_args.data(), plan.envp);
  fail(0);
  ::_exit(127);  // not reached: fail exits
}

void prepare_child(ChildPlan& plan, const std::vector<std::string>& argv,
                   const ProcessOptions& options) {
  plan.args = argv;
  plan.env = options.environment.value_or(std::vector<std::string>{});
  plan.c_args = c_strings(plan.args);
  plan.c_env = c_strings(plan.env);
  plan.envp = options.environment ? plan.c_env.data() : environ;
  for (const BindMount& mount : options.bind_mounts) {
    plan.mount_paths.push_back(mount.source.string());
    plan.mount_paths.push_back(mount.target.string());
  }
  for (std::size_t i = 0; i + 1 < plan.mount_paths.size(); i += 2) {
    plan.mounts.emplace_back(plan.mount_paths[i].data(), plan.mount_paths[i + 1].data());
  }
  plan.capture = options.stdio == Stdio::capture;
  plan.inherit_fd = options.inherit_fd;
}

// --- the parent --------------------------------------------------------------------------------

void keep_tail(std::string& text, std::size_t max) {
  if (text.size() > max) text.erase(0, text.size() - max);
}

using Deadline = std::optional<std::chrono::steady_clock::time_point>;

// Reads every stream until all are closed or the deadline passes; true when it passed.
bool drain(std::vector<std::pair<Fd*, std::string*>> streams, const Deadline& deadline,
           std::size_t max) {
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
    int wait_ms = -1;
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          *deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return true;
      wait_ms = static_cast<int>(left.count());
    }
    int ready = ::poll(fds.data(), fds.size(), wait_ms);
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

// Waits for the child; past the deadline it is killed (kill_target: -pid for its group).
// Returns the wait status; `timed_out` is set when the deadline passed.
int wait_child(pid_t pid, pid_t kill_target, const Deadline& deadline, bool& timed_out) {
  int status = 0;
  auto pause = std::chrono::milliseconds(1);  // grows to 10 ms: a quick child costs ~1 ms
  for (;;) {
    pid_t got = ::waitpid(pid, &status, (deadline && !timed_out) ? WNOHANG : 0);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR) return status;
    if (got == 0 && std::chrono::steady_clock::now() >= *deadline) {
      timed_out = true;
      ::kill(kill_target, SIGKILL);
    } else if (got == 0) {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(10));
    }
  }
}

// A setup step that failed in the child: an Error, or (exec) status 127 as a shell reports it.
Result<ProcessOutcome> setup_failed(pid_t pid, const std::string& name, const SetupFailure& failure,
                                    const ProcessOptions& options) {
  int wait_status = 0;
  while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  std::string message = fmt::format("cannot run {}: {}: {}", name, k_steps[failure.step],
                                    errno_message(failure.error));
  if (failure.step != 0) return Error{ExitCode::error, std::move(message)};
  ProcessOutcome outcome;
  outcome.exit_code = 127;
  bool merged = options.merge_stderr == MergeStderr::yes && options.stdio == Stdio::capture;
  (merged ? outcome.out : outcome.err) = message + "\n";
  return outcome;
}

void set_exit(ProcessOutcome& outcome, int wait_status) {
  if (WIFEXITED(wait_status)) {
    outcome.exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    outcome.signal = WTERMSIG(wait_status);
    outcome.exit_code = 128 + outcome.signal;
  }
}

// The pipes of one run: captured streams, the status pipe, the optional result pipe.
struct Pipes {
  std::optional<Pipe> out, err, result;
  Pipe status;
};

Result<Pipes> make_pipes(const std::string& name, const ProcessOptions& options) {
  Pipes pipes;
  VENVFIX_TRY_ASSIGN(pipes.status, make_pipe(name));
  if (options.stdio == Stdio::capture) {
    VENVFIX_TRY_ASSIGN(Pipe out, make_pipe(name));
    VENVFIX_TRY_ASSIGN(Pipe err, make_pipe(name));
    pipes.out.emplace(std::move(out));
    pipes.err.emplace(std::move(err));
  }
  if (options.result_pipe) {
    VENVFIX_TRY_ASSIGN(Pipe result, make_pipe(name));
    pipes.result.emplace(std::move(result));
  }
  return pipes;
}

// After fork, in the parent: reads what the child writes and waits for it.
ProcessOutcome collect(pid_t pid, Pipes& pipes, const ProcessOptions& options) {
  Deadline deadline;
  if (options.timeout_ms) {
    deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(*options.timeout_ms);
  }
  ProcessOutcome outcome;
  std::vector<std::pair<Fd*, std::string*>> streams;
  if (pipes.out) streams.emplace_back(&pipes.out->read, &outcome.out);
  if (pipes.err) streams.emplace_back(&pipes.err->read, &outcome.err);
  if (pipes.result) streams.emplace_back(&pipes.result->read, &outcome.result);
  const pid_t kill_target = options.stdio == Stdio::capture ? -pid : pid;
  outcome.timed_out = drain(streams, deadline, options.max_output);
  if (outcome.timed_out) ::kill(kill_target, SIGKILL);
  set_exit(outcome, wait_child(pid, kill_target, deadline, outcome.timed_out));
  keep_tail(outcome.out, options.max_output);
  keep_tail(outcome.err, options.max_output);
  keep_tail(outcome.result, options.max_output);
  return outcome;
}

}  // namespace

std::optional<fs::path> find_executable(const std::string& name) {
  auto executable = [](const fs::path& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           ::access(path.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    return executable(name) ? std::optional<fs::path>(name) : std::nullopt;
  }
  const char* path = std::getenv("PATH");
  const std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t at = 0; at <= dirs.size();) {
    const std::size_t end = std::min(dirs.find(':', at), dirs.size());
    const std::string_view dir = dirs.substr(at, end - at);
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (executable(candidate)) return candidate;
    at = end + 1;
  }
  return std::nullopt;
}

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

int start_when_allowed(const std::function<int()>& start, int* refusals) {
  // The pauses: 10 ms, doubling up to this one, 2.55 s in all.
  constexpr std::chrono::milliseconds k_longest_pause(1280);
  std::chrono::milliseconds pause(10);
  for (;;) {
    const int error = start();
    if (error != EAGAIN || pause > k_longest_pause) return error;
    if (refusals != nullptr) ++*refusals;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(pause);
    timespec wait{static_cast<time_t>(seconds.count()),
                  static_cast<long>(std::chrono::nanoseconds(pause - seconds).count())};
    while (::nanosleep(&wait, &wait) != 0 && errno == EINTR) {
    }
    pause *= 2;
  }
}

pid_t fork_when_allowed(int* refusals) {
  pid_t pid = -1;
  const int error = start_when_allowed(
      [&pid] {
        pid = ::fork();
        return pid < 0 ? errno : 0;
      },
      refusals);
  if (pid < 0) errno = error;
  return pid;
}

Result<ProcessOutcome> run_process(const std::vector<std::string>& argv,
                                   const ProcessOptions& options) {
  if (argv.empty()) return make_error(ExitCode::error, "no command to run");
  const std::string& name = argv.front();
  VENVFIX_TRY_ASSIGN(Pipes pipes, make_pipes(name, options));
  ChildPlan plan;
  prepare_child(plan, argv, options);
  plan.status_fd = pipes.status.write.get();
  if (pipes.out) plan.out_fd = pipes.out->write.get();
  if (pipes.err) {
    plan.err_fd = options.merge_stderr == MergeStderr::yes ? plan.out_fd : pipes.err->write.get();
  }
  if (pipes.result) plan.result_fd = pipes.result->write.get();
  std::optional<SignalForwarding> signals;
  if (options.forward_signals == ForwardSignals::yes) {
    signals.emplace(plan.capture);
    plan.signals = &*signals;
  }

  // Signals to forward wait while a refused fork is tried again, as they wait for fork itself.
  int refusals = 0;
  const pid_t pid = fork_when_allowed(&refusals);
  if (pid < 0)
    return make_error(ExitCode::error, "cannot run {}: fork: {}", name, errno_message(errno));
  if (refusals > 0 && pid > 0) {
    spdlog::debug("{} started after {} refused forks (the process limit)", name, refusals);
  }
  if (pid == 0) child_setup(plan);
  if (plan.capture) ::setpgid(pid, pid);  // also from here: no race with the kill
  if (signals) signals->started(pid);
  for (std::optional<Pipe>* pipe : {&pipes.out, &pipes.err, &pipes.result}) {
    if (*pipe) (*pipe)->write = Fd();
  }
  pipes.status.write = Fd();

  SetupFailure failure;
  ssize_t got;
  do {
    got = ::read(pipes.status.read.get(), &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof failure)) return setup_failed(pid, name, failure, options);
  return collect(pid, pipes, options);
}

}  // namespace venvfix
