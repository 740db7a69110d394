// venvfix recover: finish an interrupted transaction (back to before, or through to after).
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "venvfix/base/json_text.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/recover.hpp"

namespace venvfix::cli {

namespace {

struct RecoverArgs {
  bool wait = false;
};

Result<int> run_recover(const GlobalOptions& options, const RecoverArgs& args) {
  // Not open_session(): that refuses over an unfinished transaction, which is our job.
  VENVFIX_TRY_ASSIGN(env::Venv venv, open_environment(options));
  VENVFIX_TRY_ASSIGN(
      txn::VenvLock lock,
      txn::VenvLock::acquire(venv, args.wait ? txn::LockWait::wait : txn::LockWait::fail));
  VENVFIX_TRY_ASSIGN(txn::RecoverReport report, txn::recover(venv, lock));
  std::string outcome;
  std::string message;
  switch (report.outcome) {
    case txn::RecoverOutcome::nothing:
      outcome = "nothing";
      message =
          fmt::format("{}: no unfinished transaction; nothing to recover", venv.root.string());
      break;
    case txn::RecoverOutcome::rolled_back:
      outcome = "rolled-back";
      message = fmt::format(
          "{}: the interrupted transaction ({}) had not committed; the venv is back to exactly "
          "the state before it",
          venv.root.string(), report.reason);
      break;
    case txn::RecoverOutcome::completed:
      outcome = "completed";
      message = fmt::format(
          "{}: the interrupted transaction ({}) had committed; its cleanup is finished and the "
          "venv is in the state after it",
          venv.root.string(), report.reason);
      break;
  }
  if (options.json) {
    nlohmann::json document = {{"schema", "venvfix-recover/1"},
                               {"venv", venv.root.string()},
                               {"outcome", outcome},
                               {"transaction", report.id},
                               {"reason", report.reason}};
    std::cout << json_text(document, 2) << "\n";
  } else {
    std::cout << message << "\n";
  }
  return 0;
}

}  // namespace

void add_recover_command(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<RecoverArgs>();
  CLI::App* sub = app.add_subcommand(
      "recover", "Finish an interrupted transaction: back to the state before, or on to after");
  sub->add_flag("--wait", args->wait, "Wait for the venv's lock instead of failing (exit 6)");
  sub->callback([&context, args] {
    context.run = [&context, args] { return run_recover(context.options, *args); };
  });
}

}  // namespace venvfix::cli
