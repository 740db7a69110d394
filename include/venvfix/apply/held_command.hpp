// A Python command started before it may change anything, so that its interpreter's start and
// its imports overlap venvfix's own work before the command (the guard's snapshot and analysis):
// pip spends about 0.23 s importing its modules before it reads a single argument, longer than
// the guard's snapshot and analysis together. The command's interpreter runs a small bootstrap
// (held_command.cpp) that imports what the script imports, writes no bytecode, and waits; only
// when released does the script itself run, as `python SCRIPT ARGS` would run it.
#pragma once

#include <future>
#include <optional>
#include <string>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/process.hpp"
#include "venvfix/base/result.hpp"

namespace venvfix::apply {

// The interpreter a script's first line names when that line is "#!" and an absolute path to
// an executable python (python, python3, python3.12, …) and nothing else, as pip and uv write
// console scripts; nullopt for anything else (a binary, `#!/usr/bin/env python3`, arguments).
std::optional<std::string> python_script_interpreter(const fs::path& script);

class HeldCommand {
 public:
  // Starts `argv` held, its stdio venvfix's and SIGINT/SIGTERM forwarded to it (as run_guarded
  // runs a command), where argv[0] is a Python script python_script_interpreter accepts, or argv
  // is `PYTHON -m pip …` with PYTHON (looked up in PATH as execvp would) named like a python;
  // nullopt otherwise or where the start failed (then run argv as usual, once ready). A script's
  // top-level imports run before the release only where it holds nothing but imports,
  // docstrings and an `if __name__ == "__main__":` block (a console script); any other script
  // runs nothing of its own before it. For `-m pip`, what pip's __main__ imports
  // (pip._internal.cli.main) is imported before it.
  static std::optional<HeldCommand> start(const std::vector<std::string>& argv);

  HeldCommand(HeldCommand&&) noexcept = default;
  HeldCommand& operator=(HeldCommand&&) = delete;
  HeldCommand(const HeldCommand&) = delete;
  HeldCommand& operator=(const HeldCommand&) = delete;
  // Never released: the command ends without running the script (it changed nothing), and is
  // waited for.
  ~HeldCommand();

  // Lets the script run and waits for it: its exit status (128+N when killed by signal N; 127,
  // the reason logged, when the interpreter could not be started). A command that ended before
  // (a forwarded Ctrl-C) is not run: its status is returned.
  Result<int> release();

 private:
  HeldCommand(Fd go, std::future<Result<ProcessOutcome>> ended);
  // The bootstrap run by `interpreter` with `arguments` after its fd; `shown` names the command.
  static std::optional<HeldCommand> start_held(const std::string& interpreter,
                                               const std::vector<std::string>& arguments,
                                               const std::string& shown);

  Fd m_go;  // one byte written here releases it; closed unwritten, it ends
  std::future<Result<ProcessOutcome>> m_ended;
};

}  // namespace venvfix::apply
