// The phases of apply_plan (apply.hpp), each a function a test can call, in the order apply_plan
// runs them (docs/apply.md, "The pipeline"):
//
//   check_plan_current       the plan describes the venv as it is now          exit 7
//   departing_distributions  which installed distributions leave               exit 7
//   stage_plan               every wheel fetched, checked and staged           exit 4, 2
//   build_change_set         what leaves and what arrives, the way pip does    -
//   recheck_venv             no pip or uv changed the venv meanwhile           exit 7
//   move                     the journaled moves (Transaction begin + execute)  rolled back
//   verify_after_moves       loader rules, dlopen, --verify-cmd, the probe      (failures)
//   commit_or_roll_back      commit, or roll back on a failed verification      exit 5
//
// Nothing in the venv changes before `move`; every phase before it reads the venv and writes
// only the download cache and the staging directory.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "venvfix/apply/apply.hpp"
#include "venvfix/apply/stage.hpp"
#include "venvfix/apply/venv_stamp.hpp"
#include "venvfix/dist/inventory.hpp"
#include "venvfix/verify/analysis.hpp"

namespace venvfix::apply {

// Times phases into ApplyReport::timings.
class PhaseTimer {
 public:
  explicit PhaseTimer(ApplyTimings& timings) : m_timings(timings), m_start(Clock::now()) {}

  // Runs `phase` and stores its duration in `field`; returns what it returns.
  template <typename Phase>
  auto time(double ApplyTimings::*field, Phase&& phase) {
    const auto start = Clock::now();
    auto result = phase();
    m_timings.*field = seconds_since(start);
    return result;
  }
  // total_s: since the timer was made.
  void finish() { m_timings.total_s = seconds_since(m_start); }

 private:
  using Clock = std::chrono::steady_clock;
  static double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }
  ApplyTimings& m_timings;
  Clock::time_point m_start;
};

// Removes a staging directory that no transaction took over.
class StagingGuard {
 public:
  explicit StagingGuard(fs::path dir) : m_dir(std::move(dir)) {}
  StagingGuard(const StagingGuard&) = delete;
  StagingGuard& operator=(const StagingGuard&) = delete;
  ~StagingGuard();
  const fs::path& dir() const { return m_dir; }
  void release() { m_dir.clear(); }  // a transaction owns it now

 private:
  fs::path m_dir;
};

// The venv analysed with the plan's targets; its state digest must be the plan's. Errors:
// another state (ExitCode::plan_stale); the analysis failing.
Result<verify::Analysis> check_plan_current(const env::Venv& venv, const plan::Plan& plan,
                                            const manifest::Manifests& manifests,
                                            const elf::SystemView& system);

// Which installed distributions leave: the removed ones and those an install replaces.
struct Departures {
  std::vector<std::optional<std::size_t>> replaced;  // per action: the inventory index it ends
  std::set<std::size_t> leaving;                     // every such index
  std::set<std::string> installed;                   // normalised names the plan installs
};

// Errors: a remove action of a distribution that is not installed (ExitCode::plan_stale).
Result<Departures> departing_distributions(const env::Venv& venv, const dist::Inventory& inventory,
                                           const plan::Plan& plan);

// fetch_and_stage with apply's options: the unpacked-wheel cache beside the download cache and
// REQUESTED kept for a reinstall of a requested distribution (pip's "I asked for this" mark).
// Errors as fetch_and_stage's, saying that the venv is unchanged.
Result<FetchedAndStaged> stage_plan(const env::Venv& venv, const plan::Plan& plan,
                                    const dist::Inventory& inventory, const Departures& departures,
                                    fetch::Downloader& downloader, const fs::path& staging,
                                    const ApplyOptions& options);

// What leaves the venv (the way pip uninstalls, keeping what others still own and the plan's
// keep lists) and what arrives (every staged file); one ActionDone per action into `done`.
txn::ChangeSet build_change_set(const env::Venv& venv, const dist::Inventory& inventory,
                                const plan::Plan& plan, const Departures& departures,
                                const FetchedAndStaged& staged, const fs::path& staging,
                                const ApplyOptions& options, std::vector<ActionDone>& done);

// The venv's stamp must still be `at_start`: a pip or uv that installed or removed anything
// while the wheels were fetched and staged makes the plan stale. Errors: ExitCode::plan_stale,
// naming the venv and what changed; nothing was moved.
Status recheck_venv(const env::Venv& venv, const VenvStamp& at_start);

// Begins the transaction (journal written; from then on it owns `staging`) and executes its
// moves. Errors: beginning failed (nothing moved, "the venv is unchanged"); a move failed
// (rolled back: the error says so, or that `venvfix recover` must finish it).
Result<txn::Transaction> move(const env::Venv& venv, const txn::VenvLock& lock,
                              const txn::ChangeSet& changes, StagingGuard& staging);

// Everything the verification needs from the earlier phases.
struct VerifyInput {
  const plan::Plan& plan;
  const std::vector<StagedWheel>& staged;
  const std::map<fs::path, std::string>& closures_before;
  const std::set<std::string>& installed;  // normalised names
  fs::path load_verdicts;  // where kept load verdicts live (load_verdicts.hpp); empty: none
};

// Runs the checks into `report`; returns the failures, one sentence each.
std::vector<std::string> verify_after_moves(const env::Venv& venv,
                                            const manifest::Manifests& manifests,
                                            const elf::SystemView& system,
                                            const ApplyOptions& options, const VerifyInput& input,
                                            ApplyReport& report);

// Commits (report.snapshot with KeepSnapshot::yes), or rolls back when the verification failed
// and options.verify is full (ExitCode::verify_failed); a failed commit rolls back too.
Status commit_or_roll_back(txn::Transaction& transaction, const std::vector<std::string>& failures,
                           const ApplyOptions& options, ApplyReport& report);

// Rolls `transaction` back after `error`, saying in the message whether that worked.
Error rolled_back(txn::Transaction& transaction, Error error);

}  // namespace venvfix::apply
