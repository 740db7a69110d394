// dlopen in a child: the helper (`venvfix __load-check`) and the parent that runs and reads it.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "venvfix/apply/load_check.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::apply {

namespace {

constexpr std::string_view k_marker = "venvfix-load\t";

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

using LoadAnswer = std::pair<std::string, std::string>;  // (status word, message)

// One forked process loading one file; `pid` < 0 when it could not be started (`failure`).
struct LoadChild {
  pid_t pid = -1;
  Fd read_end;
  LoadAnswer failure;
};

// Forks a process that loads `file` and writes its answer to a pipe.
LoadChild start_load(const std::string& file) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {-1, Fd(), {"failed", "pipe: " + errno_message(errno)}};
  Fd read_end(fds[0]);
  Fd write_end(fds[1]);
  std::fflush(stdout);
  pid_t pid = ::fork();
  if (pid < 0) return {-1, Fd(), {"failed", "fork: " + errno_message(errno)}};
  if (pid == 0) {
    read_end = Fd();
    // A crash in the library's constructors must end this process by its signal, even when
    // the helper was built with a sanitizer whose handlers would turn it into an exit status.
    for (int signal_number : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
      ::signal(signal_number, SIG_DFL);
    }
    void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string answer = handle != nullptr ? std::string("ok") : std::string(::dlerror());
    (void)!::write(write_end.get(), answer.data(), answer.size());
    ::_exit(0);  // no destructors, no atexit handlers of what was loaded
  }
  return {pid, std::move(read_end), {}};
}

// Reads a started child's answer and reaps it.
LoadAnswer finish_load(LoadChild child) {
  if (child.pid < 0) return child.failure;
  std::string answer;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(child.read_end.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    return {"crashed", fmt::format("the process loading it died from signal {}", WTERMSIG(status))};
  }
  if (answer == "ok") return {"loaded", ""};
  if (answer.empty()) {
    return {"crashed", fmt::format("the process loading it exited with status {} without an answer",
                                   WIFEXITED(status) ? WEXITSTATUS(status) : -1)};
  }
  return {"failed", answer};
}

// "X: cannot open shared object file…" -> X (a missing dependency); empty otherwise.
std::string missing_soname(std::string_view message) {
  constexpr std::string_view k_cannot_open = ": cannot open shared object file";
  auto at = message.find(k_cannot_open);
  if (at == std::string_view::npos) return {};
  std::string_view name = message.substr(0, at);
  if (name.find('/') != std::string_view::npos) return {};  // the file itself, not a soname
  return std::string(name);
}

bool needs_python_symbols(std::string_view message) {
  constexpr std::string_view k_undefined = "undefined symbol: ";
  auto at = message.find(k_undefined);
  if (at == std::string_view::npos) return false;
  std::string_view symbol = message.substr(at + k_undefined.size());
  return symbol.starts_with("Py") || symbol.starts_with("_Py");
}

LoadResult classify(const fs::path& path, std::string_view word, std::string message,
                    const manifest::Manifests& manifests) {
  LoadResult result{path, LoadStatus::failed, std::move(message)};
  if (word == "loaded") {
    result.status = LoadStatus::loaded;
  } else if (word == "crashed") {
    result.status = LoadStatus::crashed;
  } else if (std::string soname = missing_soname(result.message);
             !soname.empty() && manifests.system_provider(soname) == manifest::Provider::driver) {
    result.status = LoadStatus::driver_missing;
    result.message =
        fmt::format("needs {}, which the GPU driver provides and this host lacks", soname);
  } else if (needs_python_symbols(result.message)) {
    result.status = LoadStatus::needs_python;
    result.message = "a Python extension module: its Py* symbols come from the interpreter (" +
                     result.message + ")";
  }
  return result;
}

}  // namespace

std::string_view to_string(LoadStatus status) {
  switch (status) {
    case LoadStatus::loaded:
      return "loaded";
    case LoadStatus::driver_missing:
      return "driver-missing";
    case LoadStatus::needs_python:
      return "needs-python";
    case LoadStatus::failed:
      return "failed";
    case LoadStatus::crashed:
      return "crashed";
    case LoadStatus::timed_out:
      return "timed-out";
  }
  return "failed";
}

int load_check_helper(std::span<const std::string> preload, std::span<const std::string> files) {
  // torch preloads in table order and ignores failures; a second pass catches an order that
  // does not suit this venv's libraries.
  std::vector<const std::string*> pending;
  for (const std::string& path : preload) pending.push_back(&path);
  for (int pass = 0; pass < 2 && !pending.empty(); ++pass) {
    std::vector<const std::string*> failed;
    for (const std::string* path : pending) {
      if (::dlopen(path->c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) failed.push_back(path);
    }
    pending.swap(failed);
  }
  // One process per file, two at a time where there are two CPUs: each relocates its file and
  // every dependency on its own (nothing loaded before it may stand in for what its own search
  // would find), which is CPU work. Not more than two: each holds its own relocated copy of
  // what it loads (about 150 MiB for cuDNN with cuBLAS), and an apply must fit a 512 MiB
  // cgroup. Answers are printed in the files' order.
  const std::size_t window = std::clamp(std::thread::hardware_concurrency(), 1u, 2u);
  std::deque<LoadChild> running;
  std::size_t next = 0;
  for (const std::string& file : files) {
    while (next < files.size() && running.size() < window) {
      running.push_back(start_load(files[next++]));
    }
    auto [word, message] = finish_load(std::move(running.front()));
    running.pop_front();
    std::printf("%.*s%s\t%s\t%s\n", static_cast<int>(k_marker.size()), k_marker.data(),
                word.c_str(), one_line(file).c_str(), one_line(message).c_str());
    std::fflush(stdout);
  }
  return 0;
}

Result<std::vector<LoadResult>> dlopen_in_child(std::span<const fs::path> files,
                                                const manifest::Manifests& manifests,
                                                const LoadCheckOptions& options) {
  std::vector<LoadResult> results;
  if (files.empty()) return results;
  fs::path helper = options.helper;
  if (helper.empty()) {
    std::error_code error;
    helper = fs::read_symlink("/proc/self/exe", error);
    if (error) {
      return make_error(ExitCode::error, "cannot find the venvfix binary for the load check: {}",
                        error.message());
    }
  }
  std::vector<std::string> argv = {helper.string(), "__load-check"};
  for (const fs::path& path : options.preload) {
    argv.push_back("--preload");
    argv.push_back(path.string());
  }
  argv.push_back("--");
  for (const fs::path& file : files) argv.push_back(file.string());

  VENVFIX_TRY_ASSIGN(CommandOutcome outcome, run_with_timeout(argv, clean_environment(),
                                                              options.timeout_seconds, 16u << 20));
  std::map<std::string, std::pair<std::string, std::string>> answers;
  for (std::string_view line : split(outcome.output, '\n')) {
    if (!line.starts_with(k_marker)) continue;
    std::vector<std::string_view> fields = split(line.substr(k_marker.size()), '\t');
    if (fields.size() < 3) continue;
    answers[std::string(fields[1])] = {std::string(fields[0]), std::string(fields[2])};
  }
  if (answers.empty() && !outcome.timed_out) {
    return make_error(ExitCode::error, "the load check ({}) exited with status {}: {}",
                      helper.string(), outcome.exit_code, printable_excerpt(outcome.output, 400));
  }
  for (const fs::path& file : files) {
    auto it = answers.find(one_line(file.string()));
    if (it != answers.end()) {
      results.push_back(classify(file, it->second.first, it->second.second, manifests));
    } else if (outcome.timed_out) {
      results.push_back({file, LoadStatus::timed_out,
                         fmt::format("not loaded within {} s", options.timeout_seconds)});
    } else {
      results.push_back({file, LoadStatus::crashed,
                         fmt::format("the load check stopped (status {}) before reaching it",
                                     outcome.exit_code)});
    }
  }
  return results;
}

}  // namespace venvfix::apply
