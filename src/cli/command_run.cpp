// venvfix run [--snapshot] [--keep] [--target D] -- CMD…: run any command under a snapshot of
// the venv and roll back if it broke a target.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <memory>
#include <set>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/session.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/snapshot.hpp"
#include "venvfix/verify/analysis.hpp"
#include "venvfix/verify/probe.hpp"

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

// The probe after the command, when the venv was whole before it (else a failing import says
// nothing about the command): its problems, one sentence each.
std::vector<std::string> probe_breakage(const GlobalOptions& options, const RunArgs& args,
                                        const verify::Analysis& after,
                                        const manifest::Manifests& manifests) {
  std::optional<verify::ProbeOptions> probe = transaction_probe(options, args.probe);
  if (!probe) return {};
  if (probe->statement.empty()) probe->statement = verify::default_probe_statement(after);
  if (probe->statement.empty() || !verify::interpreter_runs_here(after.venv)) return {};
  auto run = verify::run_probe(after.venv, *probe);
  if (!run) return {run.error().message};
  verify::ProbeResult result = verify::judge_probe(std::move(run).value(), after, manifests);
  std::vector<std::string> out;
  for (const verify::ProbeFinding& finding : result.findings) {
    if (finding.severity == verify::Severity::problem) out.push_back("probe: " + finding.message);
  }
  return out;
}

// The findings that mean "a target is broken": keyed so that before/after compare.
std::map<std::string, std::string> breakage(const verify::Analysis& analysis) {
  std::map<std::string, std::string> out;
  for (const verify::Finding& f : analysis.findings) {
    if (f.severity != verify::Severity::problem) continue;
    switch (f.kind) {
      case verify::FindingKind::unresolved_soname:
      case verify::FindingKind::escaped_soname:
        out.emplace(fmt::format("{} {}", verify::to_string(f.kind), f.soname), f.message);
        break;
      case verify::FindingKind::ghost_files:
        out.emplace(fmt::format("ghost-files {}", f.dist), f.message);
        break;
      default:
        break;
    }
  }
  return out;
}

// Runs argv with the inherited stdio; returns its exit status (128+N for signal N).
Result<int> run_child(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  // Like system(3): a Ctrl-C reaches the child; venvfix stays to check and roll back.
  struct sigaction ignore {
  }, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGQUIT, &ignore, &old_quit);
  pid_t pid = ::fork();
  if (pid < 0) {
    return make_error(ExitCode::error, "cannot start {}: {}", command.front(),
                      errno_message(errno));
  }
  if (pid == 0) {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGQUIT, &old_quit, nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "venvfix: error: cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGQUIT, &old_quit, nullptr);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string joined(const std::vector<std::string>& command) {
  std::string out;
  for (const std::string& arg : command) {
    if (!out.empty()) out += ' ';
    out += arg;
  }
  return out;
}

Result<int> run_run(const GlobalOptions& options, const RunArgs& args) {
  VENVFIX_TRY_ASSIGN(Session session, open_session(options));
  const env::Venv venv = session.venv;
  VENVFIX_TRY_ASSIGN(
      txn::VenvLock lock,
      txn::VenvLock::acquire(venv, args.wait ? txn::LockWait::wait : txn::LockWait::fail));
  std::string what = joined(args.command);
  VENVFIX_TRY_ASSIGN(txn::SnapshotInfo snapshot, txn::create_snapshot(venv, lock, "run: " + what));
  verify::Options analysis_options;
  analysis_options.targets = args.targets;
  // Analysed after the snapshot: hard links change ctimes, and the hash cache is keyed on
  // them, so the analysis after the command reuses these hashes.
  auto before = verify::analyze(venv, session.manifests, session.system, analysis_options);
  if (!before) {
    (void)txn::delete_snapshot(venv, lock, snapshot.id);
    return std::move(before).error();
  }
  VENVFIX_TRY_ASSIGN(int status, run_child(args.command));
  auto after = verify::analyze(venv, session.manifests, session.system, analysis_options);
  if (!after) {
    return make_error(after.error().code,
                      "cannot check the venv after `{}` ({}); snapshot {} is kept: `venvfix "
                      "rollback {}` restores the state before",
                      what, after.error().message, snapshot.id, snapshot.id);
  }
  auto was = breakage(*before);
  std::vector<std::string> broke;
  for (const auto& [key, message] : breakage(*after)) {
    if (!was.contains(key)) broke.push_back(message);
  }
  if (broke.empty() && was.empty())
    broke = probe_breakage(options, args, *after, session.manifests);
  if (broke.empty()) {
    if (!args.keep_snapshot)
      VENVFIX_TRY(txn::delete_snapshot(venv, lock, snapshot.id));
    else
      spdlog::info("snapshot {} kept: `venvfix rollback {}` restores the state before `{}`",
                   snapshot.id, snapshot.id, what);
    return status;
  }
  std::string list;
  for (const std::string& message : broke) list += "\n  " + message;
  if (args.keep) {
    std::fprintf(stderr,
                 "venvfix: `%s` broke %s:%s\nvenvfix: nothing was rolled back (--keep); "
                 "`venvfix rollback %s` restores the state before\n",
                 what.c_str(), after->target_names().c_str(), list.c_str(), snapshot.id.c_str());
    return static_cast<int>(ExitCode::problems);
  }
  VENVFIX_TRY(txn::rollback_to(venv, lock, snapshot.id));
  if (!args.keep_snapshot) VENVFIX_TRY(txn::delete_snapshot(venv, lock, snapshot.id));
  return make_error(ExitCode::verify_failed,
                    "`{}` broke {}; the venv was rolled back to the state before it:{}", what,
                    after->target_names(), list);
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
