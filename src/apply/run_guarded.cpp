// run_guarded: snapshot, analyse, run, analyse again, and judge with the one breakage rule
// (plan/breakage.hpp); roll back what broke a target.
#include "venvfix/apply/run_guarded.hpp"

#include <algorithm>
#include <future>
#include <string_view>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "venvfix/base/beside.hpp"
#include "venvfix/base/process.hpp"
#include "venvfix/plan/breakage.hpp"
#include "venvfix/txn/snapshot.hpp"
#include "venvfix/verify/analysis.hpp"

namespace venvfix::apply {

namespace {

std::string joined(const std::vector<std::string>& command) {
  std::string out;
  for (const std::string& arg : command) {
    if (!out.empty()) out += ' ';
    out += arg;
  }
  return out;
}

// The probe after the command, started beside the analysis after it: it needs only the venv as
// the command left it, and its statement comes from the targets, which a command rarely changes.
// Only where the venv was whole before the command (else a failing import says nothing about the
// command) and a statement is known.
struct EarlyProbe {
  std::string statement;
  std::future<Result<verify::ProbeRun>> run;
};

// The probe the options ask for, its statement from `analysis`'s targets when none is given;
// its statement is empty when there is none to run.
verify::ProbeOptions probe_for(const verify::ProbeOptions& asked,
                               const verify::Analysis& analysis) {
  verify::ProbeOptions probe = asked;
  if (probe.statement.empty()) probe.statement = verify::default_probe_statement(analysis);
  if (!probe.statement.empty() && !verify::interpreter_runs_here(analysis.venv)) {
    probe.statement.clear();
  }
  return probe;
}

std::optional<EarlyProbe> start_probe(const RunOptions& options, const verify::Analysis& before) {
  if (!options.probe || !plan::breakage(before).empty()) return std::nullopt;
  verify::ProbeOptions probe = probe_for(*options.probe, before);
  if (probe.statement.empty()) return std::nullopt;
  spdlog::debug("probe `{}` started beside the analysis after the command", probe.statement);
  EarlyProbe early{probe.statement, {}};
  // Without a thread it runs where its verdict is asked for, if it is.
  early.run = run_beside(WhenRefused::at_first_get,
                         [venv = before.venv, probe] { return verify::run_probe(venv, probe); });
  return early;
}

// The probe's problems, one sentence each: the early run when the analysis after names the same
// statement (the targets unchanged), else a run of the statement the analysis after names.
std::vector<std::string> probe_breakage(const RunOptions& options, const verify::Analysis& after,
                                        const manifest::Manifests& manifests,
                                        std::optional<EarlyProbe>& early) {
  if (!options.probe) return {};
  const verify::ProbeOptions probe = probe_for(*options.probe, after);
  const bool early_fits = early && early->statement == probe.statement;
  if (early && !early_fits) {
    spdlog::debug("the targets changed: the early probe `{}` is not used ({})", early->statement,
                  probe.statement.empty() ? std::string("no probe")
                                          : fmt::format("probe `{}`", probe.statement));
  }
  if (probe.statement.empty()) return {};
  auto run = early_fits ? early->run.get() : verify::run_probe(after.venv, probe);
  if (!run) return {run.error().message};
  verify::ProbeResult result = verify::judge_probe(std::move(run).value(), after, manifests);
  std::vector<std::string> out;
  for (const verify::ProbeFinding& finding : result.findings) {
    if (finding.severity == verify::Severity::problem) out.push_back("probe: " + finding.message);
  }
  return out;
}

// The command with the terminal's stdio, as system(3) runs it, for as long as it takes.
Result<int> run_command(const std::vector<std::string>& argv) {
  ProcessOptions process;
  process.stdio = Stdio::inherit;
  process.timeout_ms = std::nullopt;
  process.forward_signals = ForwardSignals::yes;
  VENVFIX_TRY_ASSIGN(ProcessOutcome outcome, run_process(argv, process));
  if (!outcome.err.empty()) spdlog::error("{}", outcome.err.substr(0, outcome.err.find('\n')));
  return outcome.exit_code;
}

// What the command broke: the new breaks (against `was`, the breaks before it), else (the venv
// whole before) the probe's problems.
std::vector<std::string> judge(const std::vector<plan::Break>& was, const verify::Analysis& after,
                               const manifest::Manifests& manifests, const RunOptions& options,
                               std::optional<EarlyProbe>& early) {
  std::vector<std::string> broke;
  for (const plan::Break& b : plan::new_breaks(was, plan::breakage(after))) {
    broke.push_back(b.message);
  }
  if (broke.empty() && was.empty()) broke = probe_breakage(options, after, manifests, early);
  return broke;
}

// What the command changed in the venv against the state the snapshot recorded: every path,
// type, inode, size, mtime, mode and symlink target (txn::diff_snapshot), against the manifest
// as it was written (no re-read). Nullopt where that cannot tell: a failed comparison, or a
// snapshot that does not cover every site-packages directory the analysis reads (a base prefix
// a venv sees with include-system-site-packages, a system dist-packages outside the prefix).
std::optional<txn::SnapshotDiff> command_changes(const env::Venv& venv,
                                                 const txn::TakenSnapshot& snapshot) {
  // A site-packages of the venv's own behind a symlink was refused before the snapshot
  // (env::own_site_behind_symlink): each one inside the root is walked by the snapshot.
  const bool covered =
      std::all_of(venv.site_packages.begin(), venv.site_packages.end(), [&](const fs::path& site) {
        const fs::path relative = site.lexically_normal().lexically_relative(venv.root);
        return !relative.empty() && *relative.begin() != "..";
      });
  if (!covered) return std::nullopt;
  auto diff = txn::diff_snapshot(venv, snapshot);
  if (!diff) return std::nullopt;
  return std::move(*diff);
}

// Where nothing changed, the analysis after would read the same bytes as the analysis before,
// and rolling back would move nothing: a command that changed nothing broke nothing.
bool changed_nothing(const std::optional<txn::SnapshotDiff>& changes) {
  return changes && changes->added.empty() && changes->removed.empty() && changes->changed.empty();
}

// The error of a command that could not be run (a refused fork) or waited for. Its snapshot is
// discarded where the venv is as it was, else (or when asked to be kept) kept and named.
Error not_run(const env::Venv& venv, const txn::VenvLock& lock, const txn::TakenSnapshot& taken,
              bool keep_snapshot, Error error) {
  const std::string& id = taken.info.id;
  if (!keep_snapshot && changed_nothing(command_changes(venv, taken))) {
    if (Status discarded = txn::discard_snapshot(venv, lock, id); !discarded) {
      spdlog::warn("snapshot {} is left: {}", id, discarded.error().message);
    }
    return error;
  }
  error.message +=
      fmt::format("; snapshot {} is kept: `venvfix rollback {}` restores the state before", id, id);
  return error;
}

// The venv-relative paths the command touched, and every directory above one: a distribution's
// metadata directory not among them holds the same files, with the same identities, as when the
// analysis before read it.
std::unordered_set<std::string> touched_paths(const txn::SnapshotDiff& changes) {
  std::unordered_set<std::string> touched;
  for (const auto* list : {&changes.added, &changes.removed, &changes.changed}) {
    for (std::string path : *list) {
      while (!path.empty() && touched.insert(path).second) {
        const std::size_t slash = path.rfind('/');
        path.resize(slash == std::string::npos ? 0 : slash);
      }
    }
  }
  return touched;
}

// The analysis after the command: its ELF memo told that the files may have changed; where the
// comparison is known, the distributions it left alone taken from the analysis before (`touched`
// holds what it touched, filled here), and the files' identities from the comparison.
verify::Options options_after(verify::Options options, const env::Venv& venv,
                              const std::optional<txn::SnapshotDiff>& changes,
                              verify::Analysis& before, std::unordered_set<std::string>& touched) {
  options.elf_source->files_may_have_changed();
  if (!changes) return options;
  touched = touched_paths(*changes);
  options.identity_now = [&seen = changes->files_seen,
                          root = venv.root.string() + "/"](std::string_view path) {
    auto it = path.starts_with(root) ? seen.find(path.substr(root.size())) : seen.end();
    return it != seen.end() ? std::optional(it->second) : std::nullopt;
  };
  options.earlier_inventory = &before.inventory;
  options.unchanged_metadata = [&touched, &venv](const fs::path& dir) {
    const fs::path relative = dir.lexically_relative(venv.root);
    return !relative.empty() && *relative.begin() != ".." && !touched.contains(relative.string());
  };
  return options;
}

std::string listed(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += "\n  " + line;
  return out;
}

// The snapshot and the analysis before the command, side by side: both only read the venv (the
// lock keeps other venvfix processes out, and the command has not started). The analysis
// stats the files only once the snapshot is made: its new store links change ctimes, which
// key the hash cache, so the analysis after the command reuses the hashes made here.
Result<std::pair<txn::TakenSnapshot, verify::Analysis>> snapshot_and_analyze(
    const env::Venv& venv, const txn::VenvLock& lock, const std::string& reason,
    const manifest::Manifests& manifests, const elf::SystemView& system, verify::Options options) {
  std::promise<void> snapshot_made;
  options.stat_files_after = snapshot_made.get_future().share();
  // Without a thread the snapshot is taken first: the analysis waits for it.
  std::future<Result<txn::TakenSnapshot>> snapshot = run_beside(WhenRefused::now, [&] {
    // Set on every way out, or the analysis would wait for ever.
    struct SetOnExit {
      std::promise<void>& promise;
      ~SetOnExit() { promise.set_value(); }
    } made{snapshot_made};
    return txn::take_snapshot(venv, lock, reason);
  });
  auto before = verify::analyze(venv, manifests, system, options);
  VENVFIX_TRY_ASSIGN(txn::TakenSnapshot taken, snapshot.get());
  if (!before) {
    (void)txn::delete_taken_snapshot(venv, lock, taken);
    return std::move(before).error();
  }
  return std::pair{std::move(taken), std::move(*before)};
}

// Both analyses read the ELF files through one memo: the one after the command reads again only
// those whose stat changed.
verify::Options analysis_options_for(const RunOptions& options) {
  verify::Options analysis_options;
  analysis_options.targets = options.targets;
  analysis_options.elf_source = std::make_shared<elf::ElfSource>();
  return analysis_options;
}

}  // namespace

Result<RunOutcome> run_guarded(const env::Venv& venv, const txn::VenvLock& lock,
                               const std::vector<std::string>& argv,
                               const manifest::Manifests& manifests, const elf::SystemView& system,
                               const RunOptions& options) {
  if (argv.empty()) return make_error(ExitCode::usage, "no command to run");
  const std::string what = joined(argv);
  // The snapshot would hold nothing behind it, so a rollback could not undo a change there.
  if (const auto behind = env::own_site_behind_symlink(venv)) {
    return make_error(ExitCode::error,
                      "`{}` was not run: {} is a symlink (to {}), which venvfix's snapshots record "
                      "and do not enter, so nothing the command changed behind it could be rolled "
                      "back; run it without venvfix (a guarded pip: VENVFIX_GUARD=0)",
                      what, behind->link.string(), behind->target.string());
  }
  const verify::Options analysis_options = analysis_options_for(options);
  VENVFIX_TRY_ASSIGN(auto snapshot_and_before,
                     snapshot_and_analyze(venv, lock, options.by + ": " + what, manifests, system,
                                          analysis_options));
  auto& [taken, before] = snapshot_and_before;
  const txn::SnapshotInfo& snapshot = taken.info;
  RunOutcome outcome;
  const bool keep_snapshot = options.keep_snapshot == txn::KeepSnapshot::yes;
  {
    // Joined when the command has finished, on every way out (a std::async future waits).
    std::future<void> beside;
    // Without a thread it runs before the command.
    if (options.beside_command) beside = run_beside(WhenRefused::now, options.beside_command);
    Result<int> status = options.held != nullptr ? options.held->release() : run_command(argv);
    if (!status) return not_run(venv, lock, taken, keep_snapshot, std::move(status).error());
    outcome.status = *status;
    spdlog::debug("`{}` ended with status {}", what, outcome.status);
  }
  const std::optional<txn::SnapshotDiff> changes = command_changes(venv, taken);
  if (changed_nothing(changes)) {
    spdlog::debug("`{}` changed nothing in the venv: no analysis after it", what);
    outcome.targets = before.target_names();
    // Its store links are those of files still in the venv: they cost no space, and the next
    // snapshot needs them.
    if (!keep_snapshot) VENVFIX_TRY(txn::discard_snapshot(venv, lock, snapshot.id));
    if (keep_snapshot) outcome.snapshot = snapshot.id;
    return outcome;
  }
  std::optional<EarlyProbe> early = start_probe(options, before);
  // Read before the analysis after takes the distributions the command left alone from it.
  const std::vector<plan::Break> was = plan::breakage(before);
  std::unordered_set<std::string> touched;
  auto after = verify::analyze(venv, manifests, system,
                               options_after(analysis_options, venv, changes, before, touched));
  if (!after) {
    return make_error(after.error().code,
                      "cannot check the venv after `{}` ({}); snapshot {} is kept: `venvfix "
                      "rollback {}` restores the state before",
                      what, after.error().message, snapshot.id, snapshot.id);
  }
  outcome.targets = after->target_names();
  outcome.broke = judge(was, *after, manifests, options, early);
  // A probe the judgement did not need still ends before anything moves in the venv.
  if (early && early->run.valid()) early->run.wait();
  if (outcome.broke.empty() || options.on_break == OnBreak::keep) {
    if (outcome.broke.empty() && !keep_snapshot) {
      VENVFIX_TRY(txn::delete_taken_snapshot(venv, lock, taken));
    } else {
      outcome.snapshot = snapshot.id;
    }
    return outcome;
  }
  VENVFIX_TRY(txn::rollback_to(venv, lock, snapshot.id));
  if (!keep_snapshot) VENVFIX_TRY(txn::delete_taken_snapshot(venv, lock, taken));
  return make_error(ExitCode::verify_failed,
                    "`{}` broke {}; the venv was rolled back to the state before it:{}", what,
                    outcome.targets, listed(outcome.broke));
}

}  // namespace venvfix::apply
