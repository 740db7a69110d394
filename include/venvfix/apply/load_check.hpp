// Verification after a transaction moved its files, before it commits: do the targets' libraries
// really load?
//
// 1. judge_targets: a fresh verify::analyze of the changed venv, read by the loader rules: no
//    target soname may stay unresolved or escape to the system, and no distribution the plan
//    installed may be a ghost or clobbered.
// 2. dlopen_in_child: every library the plan installed and every target object whose load
//    closure changed is dlopen'ed (RTLD_NOW) by the venvfix binary itself (`venvfix
//    __load-check`, never the venv's python, which may be the broken part) in a child process
//    with a time limit and a clean environment (no LD_LIBRARY_PATH, LD_PRELOAD or PYTHON*),
//    each library in a process that holds nothing its own search would not load (its own, or
//    one forked after a library it loads anyway: src/apply/load_chain.hpp), after what torch's
//    Python-side preload would load.
// 3. run_with_timeout runs the user's --verify-cmd.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/process.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/elf/system_view.hpp"
#include "venvfix/manifest/manifests.hpp"
#include "venvfix/plan/document.hpp"
#include "venvfix/verify/analysis.hpp"

namespace venvfix::apply {

namespace fs = std::filesystem;

// ---- 1. the loader rules --------------------------------------------------------------------

struct TargetVerdict {
  std::vector<verify::Finding> failures;   // problems the transaction must not leave
  std::vector<verify::Finding> remaining;  // other problems, reported (the plan could not fix
                                           // them, or they are not the transaction's business)
  bool ok() const { return failures.empty(); }
};

// Reads `after` (the analysis of the venv after the moves, same targets as the plan). Fails on:
// an unresolved or escaped target soname, unless the plan lists it as unresolvable; a ghost or
// clobbered distribution that the transaction installed (`installed`: normalised names), unless
// the plan lists it as unresolvable. Other problems (ones the venv had and the plan does not
// claim to fix, such as a ghost left alone by an uninstall) are `remaining`.
TargetVerdict judge_targets(const verify::Analysis& after, const plan::Plan& plan,
                            const std::set<std::string>& installed);

// For every target ELF object (absolute path): a text that changes whenever its load closure
// does (which files it binds to, their identities, what stays unresolved). Compare the value
// before and after a transaction to find the targets whose closure changed.
std::map<fs::path, std::string> closure_signatures(const verify::Analysis& analysis,
                                                   const elf::SystemView& system);

// ---- 2. dlopen in a child -------------------------------------------------------------------

enum class LoadStatus {
  loaded,          // dlopen succeeded
  driver_missing,  // only a GPU-driver soname (manifests) is missing: allowed, and said so
  needs_python,    // a Python extension: its undefined Py* symbols come from the interpreter
  failed,          // dlopen failed
  crashed,         // the process loading it died from a signal
  timed_out,       // no answer within the time limit
};
std::string_view to_string(LoadStatus status);

struct LoadResult {
  fs::path path;
  LoadStatus status = LoadStatus::failed;
  std::string message;  // dlerror() text, or what happened
  // Non-empty: not loaded now; an earlier check of the same bytes found this then (ISO 8601
  // UTC; apply/load_verdicts.hpp).
  std::string proven_at;
  bool ok() const {
    return status == LoadStatus::loaded || status == LoadStatus::driver_missing ||
           status == LoadStatus::needs_python;
  }
};

struct LoadCheckOptions {
  int timeout_seconds = 60;  // for the whole child
  fs::path helper;           // the venvfix binary; default: this process's executable
  // Loaded first (RTLD_GLOBAL, failures ignored) as torch's Python-side preload loads them.
  std::vector<fs::path> preload;
};

// The venvfix binary the load check runs: options.helper, or this process's executable.
Result<fs::path> helper_binary(const LoadCheckOptions& options);

// dlopens each of `files` in a child (see above); one result per file, in order. Errors only
// when the child cannot be started or says nothing parsable. `bases`: for each file, the index
// of the file in whose process it loads, or SIZE_MAX for a process of its own, as
// src/apply/load_chain.hpp chooses them from the loader's listings in the helper's clean
// environment (apply/load_verdicts.hpp has made those listings already); empty: the helper asks
// the loader itself.
Result<std::vector<LoadResult>> dlopen_in_child(std::span<const fs::path> files,
                                                const manifest::Manifests& manifests,
                                                const LoadCheckOptions& options,
                                                std::span<const std::size_t> bases = {});

// The helper's side (`venvfix __load-check [--preload P]… [--bases B,…] -- FILE…`): preloads,
// then loads each file in a forked process, its own or one forked from the process of a file it
// loads anyway (two process trees at a time on two or more CPUs); prints one line per file to
// stdout, in the files' order: "venvfix-load\t<loaded|failed|crashed>\t<path>\t<message>".
// `bases`: dlopen_in_child's, as it passes them ("-" for a process of its own, else the base's
// index, comma-separated); empty, or not one per file: chosen here. Returns the exit status (0).
int load_check_helper(std::span<const std::string> preload, std::span<const std::string> files,
                      std::string_view bases = {});

// ---- 3. commands ----------------------------------------------------------------------------

struct CommandOutcome {
  int exit_code = -1;  // 128+N when killed by signal N
  bool timed_out = false;
  std::string output;  // stdout and stderr together (the last `max_output` bytes)
};

// run_process (base/process.hpp) with stderr merged into stdout. `environment`: the whole
// environment ("K=V"); nullopt: this process's. After `timeout_seconds` the process group is
// killed (SIGKILL). Error: the command cannot be started.
Result<CommandOutcome> run_with_timeout(const std::vector<std::string>& argv,
                                        const std::optional<std::vector<std::string>>& environment,
                                        int timeout_seconds, std::size_t max_output = 64u << 10);

// The clean environment of the load check (base/process.hpp).
using ::venvfix::clean_environment;

}  // namespace venvfix::apply
