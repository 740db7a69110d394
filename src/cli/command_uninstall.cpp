// venvfix uninstall: uninstall the way pip does, as a transaction, refusing (exit 3) when the
// removal would leave a problem for a target unless --repair (plan the reinstall into the same
// transaction) or --force (remove anyway); the rule is plan::plan_uninstall's.
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>

#include "cli/command.hpp"
#include "cli/session.hpp"
#include "venvfix/apply/apply.hpp"
#include "venvfix/base/json_text.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/index/client.hpp"
#include "venvfix/plan/uninstall.hpp"

namespace venvfix::cli {

namespace {

struct UninstallArgs {
  std::vector<std::string> dists;
  bool repair = false;
  bool force = false;
  bool snapshot = false;
  bool wait = false;
  std::optional<std::string> verify_cmd;
  std::vector<std::string> targets;
  TransactionProbeArgs probe;
  bool recheck_loads = false;
};

Result<int> run_uninstall(const GlobalOptions& options, const UninstallArgs& args) {
  VENVFIX_TRY_ASSIGN(Session session, open_session(options, HeapUse::transaction));
  VENVFIX_TRY_ASSIGN(
      txn::VenvLock lock,
      txn::VenvLock::acquire(session.venv, args.wait ? txn::LockWait::wait : txn::LockWait::fail));
  index::IndexClient index(options.index_config());
  verify::Options analysis_options;
  analysis_options.targets = args.targets;
  VENVFIX_TRY_ASSIGN(verify::Analysis analysis, verify::analyze(session.venv, session.manifests,
                                                                session.system, analysis_options));
  const plan::UninstallMode mode = args.force    ? plan::UninstallMode::force
                                   : args.repair ? plan::UninstallMode::repair
                                                 : plan::UninstallMode::refuse;
  VENVFIX_TRY_ASSIGN(plan::UninstallPlan uninstall,
                     plan::plan_uninstall(analysis, session.manifests, index, args.dists, mode));

  apply::ApplyOptions apply_options;
  apply_options.snapshot = args.snapshot ? txn::KeepSnapshot::yes : txn::KeepSnapshot::no;
  if (args.verify_cmd) apply_options.verify_cmd = {"/bin/sh", "-c", *args.verify_cmd};
  apply_options.probe = transaction_probe(options, args.probe);
  apply_options.recheck_loads = args.recheck_loads;
  apply_options.reason = "uninstall " + join(args.dists, " ");
  if (mode == plan::UninstallMode::force && !uninstall.breaks.empty()) {
    // What it breaks stays broken: verification is reported, never rolled back on.
    apply_options.verify = apply::VerifyMode::report;
    for (const plan::Break& broken : uninstall.breaks) spdlog::warn("--force: {}", broken.message);
  }
  VENVFIX_TRY_ASSIGN(apply::ApplyReport report,
                     apply::apply_plan(session.venv, lock, uninstall.plan, session.manifests,
                                       session.system, index.downloader(), apply_options));
  if (options.json) {
    std::cout << json_text(apply::apply_json(report, "uninstall"), 2) << "\n";
  } else {
    apply::print_apply_report(report, std::cout);
  }
  return 0;
}

}  // namespace

void add_uninstall_command(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<UninstallArgs>();
  CLI::App* sub = app.add_subcommand(
      "uninstall", "Uninstall distributions as a transaction, refusing to break a target");
  sub->add_option("dists", args->dists, "Distributions to uninstall")->required();
  auto* repair = sub->add_flag("--repair", args->repair,
                               "Also reinstall what the removal breaks, in the same transaction");
  auto* force = sub->add_flag("--force", args->force, "Uninstall even if a target breaks");
  repair->excludes(force);
  sub->add_flag("--snapshot", args->snapshot,
                "Keep what the transaction removes as a snapshot for `venvfix rollback`");
  sub->add_flag("--wait", args->wait, "Wait for another venvfix's lock instead of exiting 6");
  sub->add_option("--verify-cmd", args->verify_cmd,
                  "A command (run with /bin/sh -c, the venv activated) that must succeed");
  sub->add_option("--target", args->targets,
                  "Distribution whose libraries must keep loading (repeatable)");
  sub->add_flag("--recheck-loads", args->recheck_loads,
                "Load every library again, also those an earlier load check proved loadable "
                "with the same bytes, loader and system");
  add_transaction_probe_options(*sub, args->probe);
  sub->footer(
      "Exit codes: 0 uninstalled, 3 refused (it would break a target), 4 download failed "
      "(--repair), 5 verification failed (rolled back), 6 locked, 1/2 errors.");
  sub->callback([&context, args] {
    context.run = [&context, args] { return run_uninstall(context.options, *args); };
  });
}

}  // namespace venvfix::cli
