// apply_plan: the phases of include/venvfix/apply/phases.hpp, in order, timed.
#include "venvfix/apply/apply.hpp"

#include "venvfix/apply/phases.hpp"
#include "venvfix/fetch/cache_layout.hpp"

namespace venvfix::apply {

Result<ApplyReport> apply_plan(const env::Venv& venv, const txn::VenvLock& lock,
                               const plan::Plan& plan, const manifest::Manifests& manifests,
                               const elf::SystemView& system, fetch::Downloader& downloader,
                               const ApplyOptions& options) {
  ApplyReport report;
  PhaseTimer timer(report.timings);
  report.venv = venv.root.string();
  VENVFIX_TRY(txn::require_no_unfinished_transaction(venv));
  // Taken before the analysis: a change after it shows in the digest or in recheck_venv.
  VENVFIX_TRY_ASSIGN(const VenvStamp at_start, stamp_venv(venv));
  VENVFIX_TRY_ASSIGN(const verify::Analysis before, timer.time(&ApplyTimings::check_s, [&] {
    return check_plan_current(venv, plan, manifests, system);
  }));
  if (plan.actions.empty()) {
    report.nothing_to_do = true;
    report.verified = true;
    timer.finish();
    return report;
  }
  const dist::Inventory& inventory = before.inventory;
  VENVFIX_TRY_ASSIGN(const Departures departures, departing_distributions(venv, inventory, plan));

  VENVFIX_TRY_ASSIGN(fs::path staging_dir, txn::make_staging_dir(venv));
  StagingGuard staging(staging_dir);
  VENVFIX_TRY_ASSIGN(const FetchedAndStaged staged, stage_plan(venv, plan, inventory, departures,
                                                               downloader, staging_dir, options));
  report.timings.download_s = staged.download_s;
  report.timings.stage_s = staged.stage_tail_s;
  txn::ChangeSet changes = build_change_set(venv, inventory, plan, departures, staged, staging_dir,
                                            options, report.actions);
  const std::map<fs::path, std::string> closures_before = closure_signatures(before, system);

  VENVFIX_TRY(recheck_venv(venv, at_start));
  VENVFIX_TRY_ASSIGN(txn::Transaction transaction, timer.time(&ApplyTimings::move_s, [&] {
    return move(venv, lock, changes, staging);
  }));
  const fs::path& cache_dir = downloader.config().cache_dir;
  const VerifyInput input{
      plan, staged.staged, closures_before, departures.installed,
      cache_dir.empty() ? fs::path() : cache_dir / fetch::cache_layout::load_verdicts};
  const std::vector<std::string> failures = timer.time(&ApplyTimings::verify_s, [&] {
    return verify_after_moves(venv, manifests, system, options, input, report);
  });
  VENVFIX_TRY(timer.time(&ApplyTimings::commit_s, [&] {
    return commit_or_roll_back(transaction, failures, options, report);
  }));
  timer.finish();
  return report;
}

}  // namespace venvfix::apply
