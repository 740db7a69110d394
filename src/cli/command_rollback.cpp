// venvfix rollback [SNAPSHOT]: restore the venv to a snapshot (default: the newest).
#include <iostream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "venvfix/base/json_text.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::cli {

namespace {

struct RollbackArgs {
  std::optional<std::string> snapshot;
  bool wait = false;
};

Result<int> run_rollback(const GlobalOptions& options, const RollbackArgs& args) {
  VENVFIX_TRY_ASSIGN(env::Venv venv, open_environment(options));
  VENVFIX_TRY(txn::require_no_unfinished_transaction(venv));
  VENVFIX_TRY_ASSIGN(
      txn::VenvLock lock,
      txn::VenvLock::acquire(venv, args.wait ? txn::LockWait::wait : txn::LockWait::fail));
  VENVFIX_TRY_ASSIGN(txn::SnapshotInfo info, txn::find_snapshot(venv, args.snapshot));
  VENVFIX_TRY_ASSIGN(std::optional<std::string> undo,
                     txn::restore_snapshot(venv, lock, info.id, txn::KeepSnapshot::yes));
  if (options.json) {
    nlohmann::json document = {{"schema", "venvfix-rollback/1"},
                               {"venv", venv.root.string()},
                               {"restored", info.id},
                               {"undo_snapshot", undo.value_or("")}};
    std::cout << json_text(document, 2) << "\n";
  } else {
    std::cout << fmt::format("{}: restored snapshot {} ({}, {}){}", venv.root.string(), info.id,
                             info.created, info.reason,
                             info.kind == txn::SnapshotKind::tree ? ", which is kept" : "");
    if (undo) std::cout << fmt::format("; `venvfix rollback {}` undoes this rollback", *undo);
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

void add_rollback_command(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<RollbackArgs>();
  CLI::App* sub =
      app.add_subcommand("rollback", "Restore the venv to a snapshot (default: the newest)");
  sub->add_option("snapshot", args->snapshot, "Snapshot id (see `venvfix snapshot list`)");
  sub->add_flag("--wait", args->wait, "Wait for the venv's lock instead of failing (exit 6)");
  sub->callback([&context, args] {
    context.run = [&context, args] { return run_rollback(context.options, *args); };
  });
}

}  // namespace venvfix::cli
