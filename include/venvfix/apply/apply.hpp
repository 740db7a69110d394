// `venvfix apply` and `venvfix uninstall`: a plan carried out as one transaction.
//
// The pipeline (docs/apply.md; the phases in apply/phases.hpp): check the plan against the venv
// (state digest), download and hash-check every wheel and unpack it into a staging directory on
// the venv's filesystem, compute what leaves the venv the way pip uninstalls (keeping what
// remaining distributions own), re-check that no other installer changed the venv meanwhile,
// begin the journaled transaction, move, verify (loader rules, dlopen in a child, --verify-cmd,
// the probe), then commit, or roll back to exactly the state before.
//
// Failure contract: when apply_plan returns an Error the venv is as it was before the call
// (or, if even the roll back failed, the error says so and the journal lets `venvfix recover`
// finish it; or, exit 7 from the re-check, as the other installer left it: venvfix moved
// nothing). Exit codes: 4 download, 5 verification (rolled back), 6 locked/unfinished
// transaction, 7 stale plan or a venv changed during apply, 2 a plan that cannot be applied as
// written, 1 otherwise.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "venvfix/apply/load_check.hpp"
#include "venvfix/apply/stage.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/elf/system_view.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/fetch/downloader.hpp"
#include "venvfix/manifest/manifests.hpp"
#include "venvfix/plan/document.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/transaction.hpp"
#include "venvfix/verify/probe.hpp"
#include "venvfix/wheel/wheel.hpp"

namespace venvfix::apply {

// full: a failed verification rolls back (exit 5). report: verification runs and is reported,
// and the transaction commits anyway (`uninstall --force`).
enum class VerifyMode { full, report };

struct ApplyOptions {
  txn::KeepSnapshot snapshot =
      txn::KeepSnapshot::no;            // --snapshot: keep what was replaced for rollback
  std::vector<std::string> verify_cmd;  // argv of --verify-cmd; empty: none
  int load_timeout_s = 60;              // the dlopen child
  // The load check keeps its verdicts in <download cache>/load-verdicts-v1 and trusts one whose
  // key still holds (apply/load_verdicts.hpp); true (--recheck-loads): load everything again.
  bool recheck_loads = false;
  int verify_cmd_timeout_s = 600;
  VerifyMode verify = VerifyMode::full;
  std::string reason = "apply";  // journal and snapshot reason
  fs::path helper;               // the venvfix binary for the load check; default: this one
  int stage_threads = 2;
  // Keep unpacked wheels in <download cache>/unpacked and stage from there on the next apply
  // of the same wheel (wheel/unpacked_cache.hpp).
  bool unpacked_cache = true;
  wheel::LinkMode link_mode = wheel::LinkMode::hardlink;  // --link-mode
  // Wheels fetched from elsewhere than the plan's URLs (find-links: a fleet's wheelhouse).
  WheelSources sources;
  // The probe (verify/probe.hpp) as the last verification step: the venv's own `import torch`
  // must work and map nothing the static rules forbid. nullopt: none (--no-probe; the default
  // of the library, the CLI sets it). Skipped when the interpreter cannot run on this host or
  // no import is known for the targets.
  std::optional<verify::ProbeOptions> probe;
};

struct ActionDone {
  plan::ActionKind kind = plan::ActionKind::install;
  std::string dist;
  std::string version;
  std::optional<plan::DistVersion> replaced;  // the installed distribution it took the place of
  std::size_t files_added = 0;
  std::size_t files_removed = 0;  // old files taken out (replaced ones included)
  std::vector<std::string> kept;  // venv-relative: another distribution still owns them
  bool from_cache = false;        // install: the wheel came from the download cache
};

struct ApplyTimings {
  double check_s = 0;     // state check (analysis)
  double download_s = 0;  // until the last wheel was in the cache (staging overlaps it)
  double stage_s = 0;     // staging still running after the last download
  double move_s = 0;      // journal + renames
  double verify_s = 0;
  double commit_s = 0;
  double total_s = 0;
};

struct ApplyReport {
  std::string venv;
  bool nothing_to_do = false;
  std::vector<ActionDone> actions;
  std::optional<std::string> snapshot;  // with KeepSnapshot::yes
  TargetVerdict targets;                // the loader-rule check after the moves
  std::vector<LoadResult> loads;        // the dlopen check
  std::optional<CommandOutcome> verify_cmd;
  std::optional<verify::ProbeResult> probe;  // when the probe ran
  std::string probe_skipped;                 // why it did not run, when asked for
  bool verified = false;                     // every check passed
  ApplyTimings timings;
};

// Carries out `plan` on `venv`, whose lock the caller holds. `downloader` fetches the wheels
// (its cache is reused). See the failure contract above; on success the report says what was
// done and verified.
Result<ApplyReport> apply_plan(const env::Venv& venv, const txn::VenvLock& lock,
                               const plan::Plan& plan, const manifest::Manifests& manifests,
                               const elf::SystemView& system, fetch::Downloader& downloader,
                               const ApplyOptions& options);

// The "venvfix-apply/1" document: {schema, command, venv, nothing_to_do, actions, snapshot,
// verification: {ok, targets: {failures, remaining}, loads, verify_cmd}, timings}.
nlohmann::json apply_json(const ApplyReport& report, std::string_view command);

// The verification lines of a report (what loaded, what was allowed missing, what failed),
// for terminals and error messages.
std::vector<std::string> describe_verification(const ApplyReport& report);

// The report for a terminal: what was installed and removed, the verification, the snapshot.
void print_apply_report(const ApplyReport& report, std::ostream& out);

}  // namespace venvfix::apply
