// Child processes: argv run with an explicit environment, stdout and stderr captured (bounded)
// or inherited, with or without a time limit, optionally in a private mount namespace with files
// bind-mounted over others (the loader view of `doctor --probe`), an optional result pipe on
// fd 3, and optionally SIGINT/SIGTERM forwarded to the child (`venvfix run`).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "venvfix/base/result.hpp"

namespace venvfix {

namespace fs = std::filesystem;

struct BindMount {
  fs::path source;  // absolute
  fs::path target;  // absolute; must exist, and be of the same type as source
};

enum class MergeStderr { no, yes };

// capture: stdin from /dev/null, stdout and stderr read into the outcome, the child in its own
// process group (the time limit kills the whole group). inherit: the child shares venvfix's
// stdin, stdout, stderr and process group, so it can prompt on the terminal and a Ctrl-C there
// reaches it (as system(3) runs a command).
enum class Stdio { capture, inherit };

// yes: while the child runs, a SIGINT or SIGTERM sent to venvfix goes to the child instead (a
// terminal's Ctrl-C, which the child already got, is not sent twice) and SIGQUIT is ignored:
// venvfix stays to look at what the child did.
enum class ForwardSignals { no, yes };

struct ProcessOptions {
  // The whole environment ("K=V"); nullopt: this process's.
  std::optional<std::vector<std::string>> environment;
  // Then SIGKILL to the child's process group (to the child alone with Stdio::inherit);
  // nullopt: no time limit.
  std::optional<int> timeout_ms = 60'000;
  Stdio stdio = Stdio::capture;
  ForwardSignals forward_signals = ForwardSignals::no;
  // Of each stream, only the last `max_output` bytes are kept.
  std::size_t max_output = 64u << 10;
  MergeStderr merge_stderr = MergeStderr::no;  // yes: stderr goes into `out`, in order
  // Non-empty: before exec, the child enters a private mount namespace (unshare(CLONE_NEWNS),
  // mounts made private) and bind-mounts each source over its target. Needs CAP_SYS_ADMIN.
  std::vector<BindMount> bind_mounts;
  // The child's fd 3 is the write end of a pipe whose bytes come back in `result`.
  bool result_pipe = false;
  // An fd of this process (3 or above, close-on-exec here) that the child keeps at the same number
  // across exec: a channel the child reads (apply/held_command.hpp). -1: none.
  int inherit_fd = -1;
};

struct ProcessOutcome {
  int exit_code = -1;  // the exit status; 128+N when killed by signal N
  int signal = 0;      // N when killed by signal N
  bool timed_out = false;
  std::string out;     // stdout (and stderr with MergeStderr::yes); empty with Stdio::inherit
  std::string err;     // stderr; with Stdio::inherit only a failed exec's reason
  std::string result;  // what the child wrote to fd 3 (result_pipe)
};

// Runs argv (argv[0] looked up in PATH) and waits for it to end (or the time limit).
// Errors: the command cannot be started (pipe, fork or the mount namespace failed); the message
// names the command and the step ("cannot run X: unshare: Operation not permitted"). A failed
// exec is an outcome, as a shell reports it: exit_code 127 and the reason in `err`.
Result<ProcessOutcome> run_process(const std::vector<std::string>& argv,
                                   const ProcessOptions& options);

// Calls `start` (a process start that returns 0 or an errno value) again while the kernel
// refuses it for want of a process slot (EAGAIN: a container at its pids.max, `ulimit -u`), as
// bash does: after 10 ms, then twice as long each time, 2.55 s in all, since another process's
// end frees one. Returns start's last value; `refusals` (optional) counts the refused tries.
// Logs nothing: it also runs in the load check's forked processes, where only plain system
// calls are safe.
int start_when_allowed(const std::function<int()>& start, int* refusals = nullptr);

// fork() through start_when_allowed. What fork() returns; errno is its own on -1.
pid_t fork_when_allowed(int* refusals = nullptr);

// `name` as execvp(3) would find it: itself when it holds a slash, else the first directory of
// PATH (unset: /usr/local/bin:/usr/bin:/bin; an empty entry: the working directory) holding an
// executable file of that name; nullopt when none does.
std::optional<fs::path> find_executable(const std::string& name);
// This process's environment without LD_LIBRARY_PATH, LD_PRELOAD, LD_AUDIT, PYTHONPATH,
// PYTHONHOME.
std::vector<std::string> clean_environment();

// The value of KEY in an environment list; nullopt when absent.
std::optional<std::string> environment_value(const std::vector<std::string>& environment,
                                             std::string_view key);

}  // namespace venvfix
