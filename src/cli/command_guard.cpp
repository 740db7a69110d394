// venvfix guard enable|disable|status|exec and venvfix shell-hook SHELL (include/venvfix/guard).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/session.hpp"
#include "venvfix/apply/run_guarded.hpp"
#include "venvfix/base/json_text.hpp"
#include "venvfix/base/process.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/guard/guard.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::cli {

namespace {

struct GuardArgs {
  std::string tool = "pip";
  std::vector<std::string> command;
  std::string shell;
  std::optional<std::size_t> keep;  // enable --keep
};

// The binary the wrappers and the hook call: this one, by its real path.
fs::path this_binary() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("venvfix") : exe;
}

nlohmann::json guard_json(const env::Venv& venv, const guard::GuardStatus& status) {
  nlohmann::json scripts = nlohmann::json::array();
  for (const guard::WrappedScript& script : status.scripts) {
    scripts.push_back({{"name", "bin/" + script.name}, {"intact", script.intact}});
  }
  return {{"schema", "venvfix-guard/1"},
          {"venv", venv.root.string()},
          {"enabled", status.enabled},
          {"venvfix", status.enabled ? nlohmann::json(status.venvfix.string()) : nlohmann::json()},
          {"scripts", std::move(scripts)},
          {"keep", status.enabled ? nlohmann::json(status.keep) : nlohmann::json()}};
}

void print_status(const guard::GuardStatus& status, std::string_view verb) {
  if (!status.enabled) {
    std::cout << "guard: off" << verb << "\n";
    for (const guard::WrappedScript& script : status.scripts) {
      if (!script.intact) {
        std::cout << "  bin/" << script.name
                  << " was rewritten by its installer since; left as it is\n";
      }
    }
    return;
  }
  std::cout << "guard: on" << verb << " (changing pip and uv commands run under `venvfix run "
            << "--snapshot`, the newest " << status.keep << " of their snapshots kept; venvfix "
            << status.venvfix.string() << ")\n";
  if (status.scripts.empty()) {
    std::cout << "  no pip or uv script in bin/: use `eval \"$(venvfix shell-hook bash)\"`\n";
  }
  for (const guard::WrappedScript& script : status.scripts) {
    std::cout << "  bin/" << script.name
              << (script.intact
                      ? " wrapped"
                      : " NOT wrapped: rewritten since (run `venvfix guard enable` again)")
              << "\n";
  }
}

Result<int> run_guard_change(const GlobalOptions& options, std::string_view action,
                             const GuardArgs& args) {
  VENVFIX_TRY_ASSIGN(env::Venv venv, open_environment(options));
  guard::GuardStatus status;
  if (action == "enable") {
    VENVFIX_TRY_ASSIGN(status, guard::enable(venv, this_binary(), args.keep));
  } else if (action == "disable") {
    VENVFIX_TRY_ASSIGN(status, guard::disable(venv));
  } else {
    VENVFIX_TRY_ASSIGN(status, guard::status(venv));
  }
  if (options.json) {
    std::cout << json_text(guard_json(venv, status), 2) << "\n";
  } else {
    print_status(status, action == "status"   ? ""
                         : action == "enable" ? " (enabled)"
                                              : " (disabled)");
  }
  return 0;
}

// The guard's retention, while each guarded command runs: its snapshots beyond the newest `keep`
// go (the one just taken for this command among those kept), with the store links only they held
// (the files earlier commands replaced). A failure here is said, never the command's: what it did
// stands, and `snapshot prune` can finish.
void prune_guard_snapshots(const env::Venv& venv, const txn::VenvLock& lock) {
  auto guarded = guard::status(venv);
  if (!guarded) {
    spdlog::warn("venvfix guard: {}; keeping the newest {} of the guard's snapshots",
                 guarded.error().message, guard::k_default_keep);
  }
  const std::size_t keep = guarded && guarded->enabled ? guarded->keep : guard::k_default_keep;
  auto pruned = txn::prune_snapshots_with_reason(venv, lock, keep, guard::k_snapshot_reason_prefix);
  if (!pruned) {
    spdlog::warn("venvfix guard: the guard's old snapshots were not pruned: {}",
                 pruned.error().message);
  } else if (!pruned->empty()) {
    spdlog::debug("venvfix guard: deleted {} old snapshots of the guard, kept the newest {}",
                  pruned->size(), keep);
  }
}

// The command as a guard wrapper would run it: a `pip` that PATH finds to be a wrapper (the shell
// hook's `pip` in an activated venv) is the original script the wrapper runs.
std::vector<std::string> unwrapped(std::vector<std::string> command) {
  const std::optional<fs::path> found = find_executable(command.front());
  if (const auto original = found ? guard::wrapped_original(*found) : std::nullopt) {
    command.front() = original->string();
  }
  return command;
}

// Runs the real installer: untouched for a read-only command, under run_guarded otherwise.
Result<int> run_guard_exec(const GlobalOptions& options, const GuardArgs& args) {
  VENVFIX_TRY_ASSIGN(guard::Tool tool, guard::parse_tool(args.tool));
  // The wrappers and hook functions a guarded command reaches again pass straight through.
  ::setenv("VENVFIX_GUARD_ACTIVE", "1", 1);
  if (guard::classify(tool, args.command) == guard::Effect::read_only) {
    std::vector<char*> argv;
    for (const std::string& word : args.command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv.front(), argv.data());
    return make_error(ExitCode::error, "cannot run {}: {}", args.command.front(),
                      errno_message(errno));
  }
  // pip's interpreter starts now and imports its modules while the venv is opened, locked,
  // snapshotted and analysed; its own code runs once that is done (apply/held_command.hpp).
  std::optional<apply::HeldCommand> held =
      tool == guard::Tool::pip ? apply::HeldCommand::start(unwrapped(args.command)) : std::nullopt;
  VENVFIX_TRY_ASSIGN(Session session, open_session(options, HeapUse::analysis));
  VENVFIX_TRY_ASSIGN(txn::VenvLock lock, txn::VenvLock::acquire(session.venv, txn::LockWait::wait));
  apply::RunOptions run_options;
  run_options.held = held ? &*held : nullptr;
  run_options.keep_snapshot = txn::KeepSnapshot::yes;
  run_options.probe =
      std::nullopt;  // the static analysis judges; a probe per pip call costs an import
  run_options.by = "guard";
  // While the installer runs (its snapshot is taken, and it is the newest: never pruned).
  run_options.beside_command = [&] { prune_guard_snapshots(session.venv, lock); };
  VENVFIX_TRY_ASSIGN(apply::RunOutcome outcome,
                     apply::run_guarded(session.venv, lock, args.command, session.manifests,
                                        session.system, run_options));
  if (!outcome.snapshot.empty()) {
    spdlog::info("venvfix guard: snapshot {} kept (`venvfix rollback {}` undoes `{}`)",
                 outcome.snapshot, outcome.snapshot, join(args.command, " "));
  }
  return outcome.status;
}

void add_guard_subcommands(CLI::App& guard, CommandContext& context,
                           const std::shared_ptr<GuardArgs>& args) {
  for (const char* action : {"enable", "disable", "status"}) {
    const std::string name = action;
    const char* help = name == "enable"
                           ? "Wrap the venv's pip and uv scripts so changing commands run guarded"
                       : name == "disable" ? "Put the original pip and uv scripts back"
                                           : "Say whether the guard is on and what it wraps";
    CLI::App* sub = guard.add_subcommand(name, help);
    if (name == "enable") {
      sub->add_option("--keep", args->keep,
                      "How many of its snapshots the guard keeps, newest first (default 10); "
                      "older ones go during each guarded command");
    }
    sub->callback([&context, name, args] {
      context.run = [&context, name, args] {
        return run_guard_change(context.options, name, *args);
      };
    });
  }
  CLI::App* exec = guard.add_subcommand(
      "exec",
      "Run an installer command: untouched when read-only, else as `venvfix run --snapshot`");
  exec->add_option("--tool", args->tool, "The installer the command belongs to: pip or uv");
  exec->add_option("command", args->command, "The command and its arguments, after --")
      ->required()
      ->expected(-1);
  exec->callback([&context, args] {
    context.run = [&context, args] { return run_guard_exec(context.options, *args); };
  });
}

}  // namespace

void add_guard_command(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<GuardArgs>();
  CLI::App* guard = app.add_subcommand(
      "guard", "Guard every pip and uv call that changes the venv (enable, disable, status)");
  guard->require_subcommand(1);
  add_guard_subcommands(*guard, context, args);

  CLI::App* hook = app.add_subcommand(
      "shell-hook", "Print shell functions that guard `python -m pip` and a uv outside the venv");
  hook->add_option("shell", args->shell, "bash, zsh or fish")->required();
  hook->callback([&context, args] {
    context.run = [args]() -> Result<int> {
      VENVFIX_TRY_ASSIGN(guard::Shell shell, guard::parse_shell(args->shell));
      std::cout << guard::shell_hook(shell, this_binary());
      return 0;
    };
  });
}

}  // namespace venvfix::cli
