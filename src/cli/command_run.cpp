// venvfix run [--snapshot] [--keep] [--target D] -- CMD…: run any command under a snapshot of
// the venv and roll back if it broke a target (apply::run_guarded).
#include <cstdio>
#include <memory>

#include <spdlog/spdlog.h>

#include "cli/command.hpp"
#include "cli/session.hpp"
#include "venvfix/apply/run_guarded.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/txn/lock.hpp"

namespace venvfix::cli {

namespace {

struct RunArgs {
  bool keep_snapshot = false;
  bool keep = false;
  bool wait = false;
  std::vector<std::string> targets;
  std::vector<std::string> command;
  TransactionProbeArgs probe;
};

Result<int> run_run(const GlobalOptions& options, const RunArgs& args) {
  VENVFIX_TRY_ASSIGN(Session session, open_session(options, HeapUse::analysis));
  VENVFIX_TRY_ASSIGN(
      txn::VenvLock lock,
      txn::VenvLock::acquire(session.venv, args.wait ? txn::LockWait::wait : txn::LockWait::fail));
  apply::RunOptions run_options;
  run_options.targets = args.targets;
  run_options.on_break = args.keep ? apply::OnBreak::keep : apply::OnBreak::roll_back;
  run_options.keep_snapshot = args.keep_snapshot ? txn::KeepSnapshot::yes : txn::KeepSnapshot::no;
  run_options.probe = transaction_probe(options, args.probe);
  VENVFIX_TRY_ASSIGN(apply::RunOutcome outcome,
                     apply::run_guarded(session.venv, lock, args.command, session.manifests,
                                        session.system, run_options));
  const std::string what = join(args.command, " ");
  if (outcome.broke.empty()) {
    if (!outcome.snapshot.empty()) {
      spdlog::info("snapshot {} kept: `venvfix rollback {}` restores the state before `{}`",
                   outcome.snapshot, outcome.snapshot, what);
    }
    return outcome.status;
  }
  std::string list;
  for (const std::string& message : outcome.broke) list += "\n  " + message;
  std::fprintf(stderr,
               "venvfix: `%s` broke %s:%s\nvenvfix: nothing was rolled back (--keep); "
               "`venvfix rollback %s` restores the state before\n",
               what.c_str(), outcome.targets.c_str(), list.c_str(), outcome.snapshot.c_str());
  return static_cast<int>(ExitCode::problems);
}

}  // namespace

void add_run_command(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand(
      "run", "Run a command under a snapshot; roll back if it broke a target (exit 5)");
  sub->add_flag("--snapshot", args->keep_snapshot, "Keep the snapshot after a clean run");
  sub->add_flag("--keep", args->keep,
                "Only report what the command broke (exit 3); do not roll back");
  sub->add_option("--target", args->targets,
                  "Distribution whose libraries must keep loading (repeatable; default: torch "
                  "when installed, else every distribution holding ELF objects)");
  sub->add_flag("--wait", args->wait, "Wait for the venv's lock instead of failing (exit 6)");
  sub->add_option("command", args->command, "The command and its arguments, after --")
      ->required()
      ->expected(-1);
  add_transaction_probe_options(*sub, args->probe);
  sub->footer(
      "Exit codes: the command's own status; 5 when it broke a target and was rolled back, "
      "3 with --keep.");
  sub->callback([&context, args] {
    context.run = [&context, args] { return run_run(context.options, *args); };
  });
}

}  // namespace venvfix::cli
