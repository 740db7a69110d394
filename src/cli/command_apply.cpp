// venvfix apply: carry out a plan as one transaction (no PLAN: plan first, show it, ask on a
// terminal).
#include <unistd.h>

#include <iostream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/session.hpp"
#include "venvfix/apply/apply.hpp"
#include "venvfix/apply/wheelhouse.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/json_text.hpp"
#include "venvfix/index/client.hpp"
#include "venvfix/plan/planner.hpp"

namespace venvfix::cli {

namespace {

struct ApplyArgs {
  std::optional<std::string> plan_file;
  bool snapshot = false;
  bool yes = false;
  bool wait = false;
  std::optional<std::string> verify_cmd;
  std::vector<std::string> targets;
  TransactionProbeArgs probe;
  int load_timeout = 60;
  bool recheck_loads = false;
  wheel::LinkMode link_mode = wheel::LinkMode::hardlink;
};

void print_plan(const plan::Plan& plan, std::ostream& out) {
  out << "plan for " << plan.venv << ":\n";
  for (const plan::Action& action : plan.actions) {
    out << "  " << plan::to_string(plan::kind_of(action)) << " " << plan::dist_of(action) << " "
        << plan::version_of(action);
    if (!plan::reason_of(action).empty()) out << ": " << plan::reason_of(action);
    out << "\n";
  }
  for (const plan::Unresolved& entry : plan.unresolved) {
    out << "  not fixed by this plan: " << plan::message_of(entry) << "\n";
  }
}

// On a terminal, asks; --yes or no terminal: proceeds (as the contract says).
bool confirmed(bool yes) {
  if (yes || ::isatty(STDIN_FILENO) != 1) return true;
  std::cerr << "Proceed? [y/N] " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return answer == "y" || answer == "Y" || answer == "yes";
}

Result<int> run_apply(const GlobalOptions& options, const ApplyArgs& args) {
  VENVFIX_TRY_ASSIGN(Session session, open_session(options, HeapUse::transaction));
  VENVFIX_TRY_ASSIGN(
      txn::VenvLock lock,
      txn::VenvLock::acquire(session.venv, args.wait ? txn::LockWait::wait : txn::LockWait::fail));
  index::IndexClient index(options.index_config());

  plan::Plan plan;
  if (args.plan_file) {
    if (!args.targets.empty()) {
      return make_error(ExitCode::usage,
                        "--target cannot be used with a plan file: the plan {} "
                        "names its own targets",
                        *args.plan_file);
    }
    VENVFIX_TRY_ASSIGN(plan, read_plan_file(*args.plan_file));
  } else {
    verify::Options analysis_options;
    analysis_options.targets = args.targets;
    VENVFIX_TRY_ASSIGN(
        verify::Analysis analysis,
        verify::analyze(session.venv, session.manifests, session.system, analysis_options));
    VENVFIX_TRY_ASSIGN(plan, plan::make_plan(analysis, session.manifests, index, {}));
    if (!plan.actions.empty()) {
      print_plan(plan, options.json ? std::cerr : std::cout);
      if (!confirmed(args.yes)) {
        return make_error(ExitCode::error, "cancelled; the venv is unchanged");
      }
    }
  }

  apply::ApplyOptions apply_options;
  apply_options.snapshot = args.snapshot ? txn::KeepSnapshot::yes : txn::KeepSnapshot::no;
  if (args.verify_cmd) apply_options.verify_cmd = {"/bin/sh", "-c", *args.verify_cmd};
  apply_options.probe = transaction_probe(options, args.probe);
  apply_options.load_timeout_s = args.load_timeout;
  apply_options.recheck_loads = args.recheck_loads;
  apply_options.link_mode = args.link_mode;
  VENVFIX_TRY_ASSIGN(apply_options.sources, apply::find_links_sources(plan, index));
  apply_options.reason =
      args.plan_file ? "apply " + fs::path(*args.plan_file).filename().string() : "apply";
  VENVFIX_TRY_ASSIGN(apply::ApplyReport report,
                     apply::apply_plan(session.venv, lock, plan, session.manifests, session.system,
                                       index.downloader(), apply_options));
  if (options.json) {
    std::cout << json_text(apply::apply_json(report, "apply"), 2) << "\n";
  } else {
    apply::print_apply_report(report, std::cout);
  }
  return 0;
}

}  // namespace

void add_apply_command(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<ApplyArgs>();
  CLI::App* sub = app.add_subcommand(
      "apply", "Carry out a plan as one transaction (no PLAN: plan first, show it, ask)");
  sub->add_option("plan", args->plan_file, "A plan from `venvfix plan -o FILE` ('-': stdin)");
  sub->add_flag("--snapshot", args->snapshot,
                "Keep what the transaction replaces as a snapshot for `venvfix rollback`");
  sub->add_flag("-y,--yes", args->yes, "Do not ask before applying a plan made now");
  sub->add_flag("--wait", args->wait, "Wait for another venvfix's lock instead of exiting 6");
  sub->add_option("--verify-cmd", args->verify_cmd,
                  "A command (run with /bin/sh -c, the venv activated) that must succeed, e.g. "
                  "'python -c \"import torch\"'; else everything is rolled back");
  sub->add_option("--target", args->targets,
                  "Distribution whose libraries must load (repeatable; without PLAN)");
  sub->add_option("--load-timeout", args->load_timeout, "Seconds the library load check may take")
      ->check(positive_number());
  sub->add_flag("--recheck-loads", args->recheck_loads,
                "Load every library again, also those an earlier load check proved loadable "
                "with the same bytes, loader and system (kept under the download cache)");
  sub->add_option("--link-mode", args->link_mode,
                  "How wheels already unpacked in the cache are installed: hardlink (default, "
                  "as uv) or copy (a reflink clone where possible: no inode shared with the "
                  "cache)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, wheel::LinkMode>{
          {"hardlink", wheel::LinkMode::hardlink}, {"copy", wheel::LinkMode::copy}}));
  add_transaction_probe_options(*sub, args->probe);
  sub->footer(
      "Exit codes: 0 applied (or nothing to do), 4 download failed, 5 verification failed (rolled "
      "back), 6 locked or unfinished transaction, 7 the plan no longer matches the venv, 1/2 "
      "errors. The venv is unchanged after every failure.");
  sub->callback([&context, args] {
    context.run = [&context, args] { return run_apply(context.options, *args); };
  });
}

}  // namespace venvfix::cli
