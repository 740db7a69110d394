// `venvfix run -- CMD`: any command run under a whole-venv snapshot, and rolled back when it
// broke a target (plan/breakage.hpp: a new unresolved or escaped target soname, a needed
// distribution with ghost files, a needed requirement unmet; and, when the venv was whole
// before, a failing probe).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "venvfix/apply/held_command.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/elf/system_view.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/manifest/manifests.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/transaction.hpp"
#include "venvfix/verify/probe.hpp"

namespace venvfix::apply {

// roll_back: a command that broke a target is undone (exit 5). keep: only reported (--keep).
enum class OnBreak { roll_back, keep };

struct RunOptions {
  std::vector<std::string> targets;  // --target; empty: verify's default
  OnBreak on_break = OnBreak::roll_back;
  // yes: the snapshot stays after a clean run (or a rolled-back one) for `venvfix rollback`.
  txn::KeepSnapshot keep_snapshot = txn::KeepSnapshot::no;
  // The probe after the command when the venv had no break before it; nullopt: none.
  std::optional<verify::ProbeOptions> probe;
  // Who ran it: the snapshot's reason is "<by>: <command>" (the guard prunes its own by it).
  std::string by = "run";
  // Work done on another thread while the command runs, finished before anything after the
  // command reads the venv or its snapshots (the guard's prune of its older snapshots, which
  // reads and removes only what the snapshot just taken does not need). Empty: none.
  std::function<void()> beside_command;
  // argv already started and held (HeldCommand::start, the guard): released once the snapshot
  // and the analysis before it are done, instead of started then. Null: started then.
  HeldCommand* held = nullptr;
};

struct RunOutcome {
  int status = 0;                  // the command's exit status (128+N when killed by signal N)
  std::vector<std::string> broke;  // what it broke, one sentence each; empty: nothing
  std::string targets;             // the target names, for messages
  std::string snapshot;            // the snapshot's id when it was kept, else empty
};

// Takes the snapshot, runs argv with venvfix's stdio (SIGINT/SIGTERM forwarded to it, no time
// limit), analyses the venv before and after, and deletes the snapshot after a clean run (unless
// kept). Errors: the snapshot or an analysis failed (after the command: the snapshot is kept
// and named); the command broke a target and was rolled back (ExitCode::verify_failed, naming
// the command, the targets and each break). With OnBreak::keep a break is an outcome (`broke`,
// `snapshot` set) and nothing is rolled back. A command that cannot be started is status 127,
// as a shell reports it, with the reason logged.
Result<RunOutcome> run_guarded(const env::Venv& venv, const txn::VenvLock& lock,
                               const std::vector<std::string>& argv,
                               const manifest::Manifests& manifests, const elf::SystemView& system,
                               const RunOptions& options);

}  // namespace venvfix::apply
