// venvfix uninstall: uninstall the way pip does, as a transaction, refusing (exit 3) when the
// removal would leave a problem for a target unless --repair (plan the reinstall into the same
// transaction) or --force (remove anyway).
#include <iostream>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/session.hpp"
#include "venvfix/apply/apply.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/index/client.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/plan/planner.hpp"

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
};

// What the removal would break, in the planner's words: the repairs it needs (which soname,
// which consumer, which distribution still needs the file) and the problems no repair can fix.
// Problems the venv already had are not the removal's doing and are left out.
struct Breakage {
  std::vector<std::string> repairs;
  std::vector<std::string> unrepairable;
  bool empty() const { return repairs.empty() && unrepairable.empty(); }
};

Breakage breakage(const plan::Plan& plan, const verify::Analysis& analysis) {
  std::set<std::string> existing;
  for (const verify::Finding& finding : analysis.findings) {
    if (finding.severity != verify::Severity::problem) continue;
    if (!finding.soname.empty()) existing.insert("soname " + finding.soname);
    if (!finding.dist.empty()) existing.insert("dist " + pep::normalize_name(finding.dist));
  }
  Breakage out;
  for (const plan::Action& action : plan.actions) {
    if (action.kind == plan::ActionKind::install) {
      out.repairs.push_back(
          fmt::format("needs {} {} reinstalled: {}", action.dist, action.version, action.reason));
    }
  }
  for (const nlohmann::json& entry : plan.unresolved) {
    if (!entry.is_object()) continue;
    std::string soname = entry.value("soname", std::string());
    std::string dist = entry.value("dist", std::string());
    if ((!soname.empty() && existing.count("soname " + soname)) ||
        (!dist.empty() && existing.count("dist " + pep::normalize_name(dist)))) {
      continue;
    }
    out.unrepairable.push_back(entry.value("message", entry.dump()));
  }
  return out;
}

Result<int> run_uninstall(const GlobalOptions& options, const UninstallArgs& args) {
  VENVFIX_TRY_ASSIGN(Session session, open_session(options));
  VENVFIX_TRY_ASSIGN(
      txn::VenvLock lock,
      txn::VenvLock::acquire(session.venv, args.wait ? txn::LockWait::wait : txn::LockWait::fail));
  index::IndexClient index(options.index_config());
  verify::Options analysis_options;
  analysis_options.targets = args.targets;
  VENVFIX_TRY_ASSIGN(verify::Analysis analysis, verify::analyze(session.venv, session.manifests,
                                                                session.system, analysis_options));
  plan::PlanOptions plan_options;
  plan_options.uninstall = args.dists;
  VENVFIX_TRY_ASSIGN(plan::Plan plan,
                     plan::make_plan(analysis, session.manifests, index, plan_options));

  const std::string names = join(args.dists, ", ");
  const Breakage broken = breakage(plan, analysis);
  apply::ApplyOptions apply_options;
  apply_options.snapshot = args.snapshot ? txn::KeepSnapshot::yes : txn::KeepSnapshot::no;
  if (args.verify_cmd) apply_options.verify_cmd = {"/bin/sh", "-c", *args.verify_cmd};
  apply_options.probe = transaction_probe(options, args.probe);
  apply_options.reason = "uninstall " + join(args.dists, " ");
  if (!broken.empty()) {
    if (args.force) {
      // Only the removals; verification is reported, never rolled back on.
      std::erase_if(plan.actions,
                    [](const plan::Action& a) { return a.kind != plan::ActionKind::remove; });
      apply_options.verify = apply::VerifyMode::report;
      for (const std::string& line : broken.repairs) spdlog::warn("--force: {}", line);
      for (const std::string& line : broken.unrepairable) spdlog::warn("--force: {}", line);
    } else if (!args.repair || !broken.unrepairable.empty()) {
      std::vector<std::string> lines = broken.repairs;
      lines.insert(lines.end(), broken.unrepairable.begin(), broken.unrepairable.end());
      return make_error(ExitCode::problems,
                        "uninstalling {} would leave a problem for {}: {}; {}; the venv is "
                        "unchanged",
                        names, analysis.target_names(), join(lines, "; "),
                        broken.unrepairable.empty()
                            ? "--repair reinstalls what it breaks in the same transaction, "
                              "--force uninstalls anyway"
                            : "no repair can fix that; --force uninstalls anyway");
    }
  }
  VENVFIX_TRY_ASSIGN(apply::ApplyReport report,
                     apply::apply_plan(session.venv, lock, plan, session.manifests, session.system,
                                       index.downloader(), apply_options));
  if (options.json) {
    std::cout << apply::apply_json(report, "uninstall").dump(2) << "\n";
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
  add_transaction_probe_options(*sub, args->probe);
  sub->footer(
      "Exit codes: 0 uninstalled, 3 refused (it would break a target), 4 download failed "
      "(--repair), 5 verification failed (rolled back), 6 locked, 1/2 errors.");
  sub->callback([&context, args] {
    context.run = [&context, args] { return run_uninstall(context.options, *args); };
  });
}

}  // namespace venvfix::cli
