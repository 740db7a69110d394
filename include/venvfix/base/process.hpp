// Child processes with a time limit: argv run with an explicit environment, stdout and stderr
// captured (bounded), optionally in a private mount namespace with files bind-mounted over
// others (the loader view of `doctor --probe`), and an optional result pipe on fd 3.
#pragma once

#include <cstddef>
#include <filesystem>
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

struct ProcessOptions {
  // The whole environment ("K=V"); nullopt: this process's.
  std::optional<std::vector<std::string>> environment;
  int timeout_ms = 60'000;  // then SIGKILL to the child's process group
  // Of each stream, only the last `max_output` bytes are kept.
  std::size_t max_output = 64u << 10;
  MergeStderr merge_stderr = MergeStderr::no;  // yes: stderr goes into `out`, in order
  // Non-empty: before exec, the child enters a private mount namespace (unshare(CLONE_NEWNS),
  // mounts made private) and bind-mounts each source over its target. Needs CAP_SYS_ADMIN.
  std::vector<BindMount> bind_mounts;
  // The child's fd 3 is the write end of a pipe whose bytes come back in `result`.
  bool result_pipe = false;
};

struct ProcessOutcome {
  int exit_code = -1;  // the exit status; 128+N when killed by signal N
  int signal = 0;      // N when killed by signal N
  bool timed_out = false;
  std::string out;     // stdout (and stderr with MergeStderr::yes)
  std::string err;     // stderr
  std::string result;  // what the child wrote to fd 3 (result_pipe)
};

// Runs argv (argv[0] looked up in PATH) in its own process group, stdin from /dev/null.
// Errors: the command cannot be started (pipe, fork or the mount namespace failed); the message
// names the command and the step ("cannot run X: unshare: Operation not permitted"). A failed
// exec is an outcome, as a shell reports it: exit_code 127 and the reason in `err`.
Result<ProcessOutcome> run_process(const std::vector<std::string>& argv,
                                   const ProcessOptions& options);

// This process's environment without LD_LIBRARY_PATH, LD_PRELOAD, LD_AUDIT, PYTHONPATH,
// PYTHONHOME.
std::vector<std::string> clean_environment();

// The value of KEY in an environment list; nullopt when absent.
std::optional<std::string> environment_value(const std::vector<std::string>& environment,
                                             std::string_view key);

}  // namespace venvfix
