// dlopen in a child: the helper (`venvfix __load-check`) and the parent that runs and reads it.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "apply/load_chain.hpp"
#include "venvfix/apply/load_check.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/parallel.hpp"
#include "venvfix/base/process.hpp"
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
using Answers = std::vector<std::optional<LoadAnswer>>;  // by file index

// The status word of a file that no process could be started to load.
constexpr std::string_view k_unchecked = "unchecked";

// The files and, for each, those loaded in processes forked from its own (load_chain.hpp).
struct LoadTree {
  std::span<const std::string> files;
  std::vector<std::vector<std::size_t>> dependents;
};

// One line of a process tree's pipe: "index\tword\tmessage\n".
void write_answer(int out, std::size_t index, std::string_view word, std::string_view message) {
  const std::string line = fmt::format("{}\t{}\t{}\n", index, word, one_line(std::string(message)));
  (void)!::write(out, line.data(), line.size());
}

std::string died_from(int signal_number) {
  return fmt::format("the process loading it died from signal {}", signal_number);
}

// In a forked process: loads file `index`, answers on `out`, then loads each dependent in a
// process forked from this one, one at a time, and answers for one that dies from a signal.
// A dependent left without an answer (its base failed, or it exited) is loaded again later in
// a process of its own. Never returns: no destructors or atexit handlers of what was loaded.
[[noreturn]] void load_here(const LoadTree& tree, std::size_t index, int out) {
  void* handle = ::dlopen(tree.files[index].c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    write_answer(out, index, "failed", ::dlerror());
    ::_exit(0);
  }
  write_answer(out, index, "loaded", "");
  for (std::size_t dependent : tree.dependents[index]) {
    // Refused (a process limit): not waited for, the dependent loads later on its own.
    const pid_t pid = ::fork();
    if (pid == 0) load_here(tree, dependent, out);
    if (pid < 0) continue;
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) write_answer(out, dependent, "crashed", died_from(WTERMSIG(status)));
  }
  ::_exit(0);
}

// A forked process loading one file and its dependents; `pid` < 0 when it could not be
// started (then `failure` is the file's answer).
struct LoadChild {
  std::size_t index = 0;
  pid_t pid = -1;
  Fd read_end;
  LoadAnswer failure;
  std::string text;  // what the tree has written so far
};

// One read of a started tree's pipe; false at its end (every process of the tree has ended).
bool read_more(LoadChild& child) {
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(child.read_end.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    child.text.append(buffer, static_cast<std::size_t>(n));
    return true;
  }
}

// `wait`: where fork is refused for want of a process slot, wait for one (fork_when_allowed);
// else give up at once (another tree of ours runs, and its end frees one).
LoadChild start_load(const LoadTree& tree, std::size_t index, bool wait) {
  int fds[2];
  // Neither a pipe nor a process is a verdict on the file: the check itself could not go on
  // (dlopen_in_child).
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return {index, -1, Fd(), {std::string(k_unchecked), "pipe: " + errno_message(errno)}, {}};
  }
  Fd read_end(fds[0]);
  Fd write_end(fds[1]);
  std::fflush(stdout);
  pid_t pid = wait ? fork_when_allowed() : ::fork();
  if (pid < 0)
    return {index, -1, Fd(), {std::string(k_unchecked), "fork: " + errno_message(errno)}, {}};
  if (pid == 0) {
    read_end = Fd();
    // A crash in the library's constructors must end this process by its signal, even when
    // the helper was built with a sanitizer whose handlers would turn it into an exit status.
    for (int signal_number : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
      ::signal(signal_number, SIG_DFL);
    }
    load_here(tree, index, write_end.get());
  }
  return {index, pid, std::move(read_end), {}, {}};
}

// Reads the answers of a started process tree (first answer per file wins) and reaps it.
void finish_load(LoadChild child, Answers& answers) {
  if (child.pid < 0) {
    answers[child.index] = std::move(child.failure);
    return;
  }
  while (read_more(child)) {
  }
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  for (std::string_view line : split(child.text, '\n')) {
    std::vector<std::string_view> fields = split(line, '\t');
    std::size_t index = 0;
    if (fields.size() < 3 ||
        std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), index).ec !=
            std::errc() ||
        index >= answers.size() || answers[index]) {
      continue;
    }
    answers[index] = LoadAnswer{std::string(fields[1]), std::string(fields[2])};
  }
  if (answers[child.index]) return;
  if (WIFSIGNALED(status)) {
    answers[child.index] = LoadAnswer{"crashed", died_from(WTERMSIG(status))};
  } else {
    answers[child.index] = LoadAnswer{
        "crashed", fmt::format("the process loading it exited with status {} without an answer",
                               WIFEXITED(status) ? WEXITSTATUS(status) : -1)};
  }
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
  LoadResult result{path, LoadStatus::failed, std::move(message), {}};
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

namespace {

// Which files load in the process of another (load_chain.hpp). Not after a preload: the real
// loader's --list cannot see what the helper preloaded, so every file then loads on its own.
std::vector<std::size_t> choose_bases(std::span<const std::string> files, bool preloaded) {
  const fs::path loader = preloaded || files.size() < 2 ? fs::path() : detail::running_loader();
  if (loader.empty()) return std::vector<std::size_t>(files.size(), detail::k_own_process);
  std::vector<std::optional<detail::InodeKey>> identities(files.size());
  std::vector<detail::Closure> closures(files.size());
  (void)run_parallel(files.size(), 2, [&](std::size_t i, const JobContext&) -> Status {
    identities[i] = detail::inode_key(files[i]);
    closures[i] = detail::loader_closure(loader, files[i]);
    return ok();
  });
  return detail::chain_bases(identities, closures);
}

// The --bases argument: "-" for a process of its own, else the base's index.
std::string bases_argument(std::span<const std::size_t> bases) {
  std::string text;
  for (std::size_t base : bases) {
    if (!text.empty()) text += ',';
    text += base == detail::k_own_process ? std::string("-") : std::to_string(base);
  }
  return text;
}

// The bases the parent chose; empty where they are not one per file. A base that does not name
// another file makes a process of its own (no file waits for one that never loads).
std::vector<std::size_t> parse_bases(std::string_view text, std::size_t files) {
  std::vector<std::size_t> bases;
  if (text.empty()) return bases;
  for (std::string_view word : split(text, ',')) {
    std::size_t base = detail::k_own_process;
    const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), base);
    if (error != std::errc() || end != word.data() + word.size() || base >= files ||
        base == bases.size()) {
      base = detail::k_own_process;
    }
    bases.push_back(base);
  }
  if (bases.size() != files) bases.clear();
  return bases;
}

// Prints each answer as soon as every earlier file has one.
void print_ready(std::span<const std::string> files, const Answers& answers, std::size_t& printed) {
  for (; printed < answers.size() && answers[printed]; ++printed) {
    const auto& [word, message] = *answers[printed];
    std::printf("%.*s%s\t%s\t%s\n", static_cast<int>(k_marker.size()), k_marker.data(),
                word.c_str(), one_line(files[printed]).c_str(), one_line(message).c_str());
    std::fflush(stdout);
  }
}

// Starts a process tree for each of `roots`, two at a time where there are two CPUs, the next
// as soon as any one ends (a chain such as cuBLAS's takes longer than the rest together).
void run_trees(const LoadTree& tree, std::span<const std::size_t> roots, Answers& answers,
               std::size_t& printed) {
  // Not more than two at once: each holds its own relocated copy of what it loads (about
  // 150 MiB for cuDNN with cuBLAS), and an apply must fit a 512 MiB cgroup.
  const std::size_t window = std::clamp(std::thread::hardware_concurrency(), 1u, 2u);
  std::vector<LoadChild> running;
  std::size_t next = 0;
  // A start refused with none of ours running (after waiting for a slot): the rest would be too.
  std::optional<LoadAnswer> refused;
  while (next < roots.size() || !running.empty()) {
    while (next < roots.size() && running.size() < window) {
      if (refused) {
        answers[roots[next++]] = refused;
        continue;
      }
      LoadChild child = start_load(tree, roots[next], running.empty());
      if (child.pid < 0 && child.failure.first == k_unchecked) {
        // No process slot while one of ours runs: its end frees one, then this one starts.
        if (!running.empty()) break;
        refused = child.failure;
      }
      ++next;
      if (child.pid < 0) {
        finish_load(std::move(child), answers);
      } else {
        running.push_back(std::move(child));
      }
    }
    if (running.empty()) continue;
    std::vector<pollfd> waiting;
    waiting.reserve(running.size());
    for (const LoadChild& child : running) waiting.push_back({child.read_end.get(), POLLIN, 0});
    if (::poll(waiting.data(), waiting.size(), -1) < 0 && errno != EINTR) {
      // Cannot wait for several at once: finish them in turn.
      for (pollfd& one : waiting) one.revents = POLLIN;
    }
    for (std::size_t i = running.size(); i-- > 0;) {
      if (waiting[i].revents == 0 || read_more(running[i])) continue;
      finish_load(std::move(running[i]), answers);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
    print_ready(tree.files, answers, printed);
  }
  print_ready(tree.files, answers, printed);
}

}  // namespace

int load_check_helper(std::span<const std::string> preload, std::span<const std::string> files,
                      std::string_view given_bases) {
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
  // Each file loads in a process that holds nothing its own search would not load: its own,
  // or one forked from the process of a file it loads anyway (load_chain.hpp).
  std::vector<std::size_t> bases = parse_bases(given_bases, files.size());
  if (bases.empty()) bases = choose_bases(files, !preload.empty());
  LoadTree tree{files, std::vector<std::vector<std::size_t>>(files.size())};
  std::vector<std::size_t> roots;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (bases[i] == detail::k_own_process) {
      roots.push_back(i);
    } else {
      tree.dependents[bases[i]].push_back(i);
    }
  }
  Answers answers(files.size());
  std::size_t printed = 0;
  run_trees(tree, roots, answers, printed);
  // Files whose base did not load, or whose process ended without an answer: on their own.
  const LoadTree alone{files, std::vector<std::vector<std::size_t>>(files.size())};
  std::vector<std::size_t> left;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!answers[i]) left.push_back(i);
  }
  run_trees(alone, left, answers, printed);
  return 0;
}

Result<fs::path> helper_binary(const LoadCheckOptions& options) {
  if (!options.helper.empty()) return options.helper;
  std::error_code error;
  fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) {
    return make_error(ExitCode::error, "cannot find the venvfix binary for the load check: {}",
                      error.message());
  }
  return self;
}

Result<std::vector<LoadResult>> dlopen_in_child(std::span<const fs::path> files,
                                                const manifest::Manifests& manifests,
                                                const LoadCheckOptions& options,
                                                std::span<const std::size_t> bases) {
  std::vector<LoadResult> results;
  if (files.empty()) return results;
  VENVFIX_TRY_ASSIGN(const fs::path helper, helper_binary(options));
  std::vector<std::string> argv = {helper.string(), "__load-check"};
  for (const fs::path& path : options.preload) {
    argv.push_back("--preload");
    argv.push_back(path.string());
  }
  if (bases.size() == files.size()) {
    argv.push_back("--bases");
    argv.push_back(bases_argument(bases));
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
    if (it != answers.end() && it->second.first == k_unchecked) {
      return make_error(ExitCode::error, "the load check ({}) could not load {}: {}",
                        helper.string(), file.string(), it->second.second);
    }
    if (it != answers.end()) {
      results.push_back(classify(file, it->second.first, it->second.second, manifests));
    } else if (outcome.timed_out) {
      results.push_back({file,
                         LoadStatus::timed_out,
                         fmt::format("not loaded within {} s", options.timeout_seconds),
                         {}});
    } else {
      results.push_back(
          {file,
           LoadStatus::crashed,
           fmt::format("the load check stopped (status {}) before reaching it", outcome.exit_code),
           {}});
    }
  }
  return results;
}

}  // namespace venvfix::apply
