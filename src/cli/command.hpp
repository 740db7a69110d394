// What every CLI command file provides: it registers its sub-app and options, and sets the
// function main() runs when that sub-app was chosen.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/global_options.hpp"
#include "venvfix/base/result.hpp"

namespace venvfix::cli {

// A command returns its exit code (0, or 3 for "problems found") or an Error.
using CommandRun = std::function<Result<int>()>;

struct CommandContext {
  GlobalOptions options;
  CommandRun run;  // set by the chosen sub-app's callback
};

void add_doctor_command(CLI::App& app, CommandContext& context);
void add_why_command(CLI::App& app, CommandContext& context);
void add_plan_command(CLI::App& app, CommandContext& context);
void add_snapshot_command(CLI::App& app, CommandContext& context);
void add_rollback_command(CLI::App& app, CommandContext& context);
void add_recover_command(CLI::App& app, CommandContext& context);
void add_run_command(CLI::App& app, CommandContext& context);
void add_apply_command(CLI::App& app, CommandContext& context);
void add_uninstall_command(CLI::App& app, CommandContext& context);
void add_guard_command(CLI::App& app, CommandContext& context);
void add_fetch_command(CLI::App& app, CommandContext& context);
void add_cache_command(CLI::App& app, CommandContext& context);
// The hidden `__load-check` helper the transaction's load check runs.
void add_load_check_command(CLI::App& app, CommandContext& context);

// True when stdout is a terminal and colour is allowed (NO_COLOR unset).
bool stdout_wants_color();

}  // namespace venvfix::cli
