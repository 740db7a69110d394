// apply_plan: the pipeline of include/venvfix/apply/apply.hpp.
#include "venvfix/apply/apply.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include <spdlog/spdlog.h>

#include "venvfix/apply/removal.hpp"
#include "venvfix/apply/stage.hpp"
#include "venvfix/dist/scan.hpp"
#include "venvfix/elf/elf_file.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/plan/planner.hpp"

extern char** environ;

namespace venvfix::apply {

using txn::ChangeSet;
using txn::make_staging_dir;
using txn::require_no_unfinished_transaction;
using txn::Transaction;
using txn::VenvLock;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool same_path(const fs::path& a, const fs::path& b) {
  if (a.lexically_normal() == b.lexically_normal()) return true;
  std::error_code error;
  return fs::equivalent(a, b, error);
}

// The installed distribution `name` (and `version`, when given and installed; else any).
std::optional<std::size_t> find_installed(const dist::Inventory& inventory, std::string_view name,
                                          std::string_view version) {
  const std::string normalized = pep::normalize_name(name);
  std::optional<std::size_t> any;
  for (std::size_t i = 0; i < inventory.distributions.size(); ++i) {
    const dist::Distribution& dist = inventory.distributions[i];
    if (dist.normalized_name != normalized) continue;
    if (version.empty() || dist.version == version) return i;
    if (!any) any = i;
  }
  return any;
}

// Removes a staging directory that no transaction took over.
class StagingGuard {
 public:
  explicit StagingGuard(fs::path dir) : m_dir(std::move(dir)) {}
  StagingGuard(const StagingGuard&) = delete;
  StagingGuard& operator=(const StagingGuard&) = delete;
  ~StagingGuard() {
    if (m_dir.empty()) return;
    std::error_code error;
    fs::remove_all(m_dir, error);
    if (error) spdlog::warn("cannot remove {}: {}", m_dir.string(), error.message());
  }
  void release() { m_dir.clear(); }

 private:
  fs::path m_dir;
};

Error unchanged(Error error) {
  error.message += "; the venv is unchanged";
  return error;
}

Error rolled_back(Transaction& transaction, Error error) {
  Status status = transaction.roll_back();
  if (!status) {
    error.message +=
        fmt::format("; rolling back failed too ({}); run `venvfix recover` to finish it",
                    status.error().message);
    return error;
  }
  error.message += "; the transaction was rolled back and the venv is unchanged";
  return error;
}

// The environment of --verify-cmd: the user's, with the venv activated as `activate` does.
std::vector<std::string> activated_environment(const env::Venv& venv) {
  std::vector<std::string> out;
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    if (text.starts_with("PATH=")) {
      path = std::string(text.substr(5));
    } else if (!text.starts_with("VIRTUAL_ENV=") && !text.starts_with("PYTHONHOME=")) {
      out.emplace_back(text);
    }
  }
  out.push_back("VIRTUAL_ENV=" + venv.root.string());
  out.push_back("PATH=" + (venv.root / "bin").string() + ":" + path);
  return out;
}

// Everything the verification needs from the pipeline.
struct VerifyInput {
  const plan::Plan& plan;
  const std::vector<StagedWheel>& staged;
  const std::map<fs::path, std::string>& closures_before;
  std::set<std::string> installed;  // normalised names
};

// The last check: the venv's own import (verify/probe.hpp). Its problems fail the
// transaction, unless the plan said it cannot make the targets whole (then they are reported).
void probe_after_moves(const verify::Analysis& after, const manifest::Manifests& manifests,
                       const ApplyOptions& options, const VerifyInput& input, ApplyReport& report,
                       std::vector<std::string>& failures) {
  verify::ProbeOptions probe = *options.probe;
  if (probe.statement.empty()) probe.statement = verify::default_probe_statement(after);
  if (probe.statement.empty()) {
    report.probe_skipped = "no import is known for " + after.target_names();
  } else if (!verify::interpreter_runs_here(after.venv)) {
    report.probe_skipped = "the venv's interpreter is not of this host's architecture";
  }
  if (!report.probe_skipped.empty()) {
    spdlog::info("probe skipped: {}", report.probe_skipped);
    return;
  }
  auto run = verify::run_probe(after.venv, probe);
  if (!run) {
    failures.push_back(run.error().message);
    return;
  }
  report.probe = verify::judge_probe(std::move(run).value(), after, manifests);
  for (const verify::ProbeFinding& finding : report.probe->findings) {
    if (finding.severity != verify::Severity::problem) continue;
    if (input.plan.unresolved.is_array() && !input.plan.unresolved.empty()) {
      spdlog::warn("probe: {}", finding.message);
    } else {
      failures.push_back("probe: " + finding.message);
    }
  }
}

// Runs the checks into `report`; returns the failures, one sentence each.
std::vector<std::string> verify_after_moves(const env::Venv& venv,
                                            const manifest::Manifests& manifests,
                                            const elf::SystemView& system,
                                            const ApplyOptions& options, const VerifyInput& input,
                                            ApplyReport& report) {
  std::vector<std::string> failures;
  verify::Options analysis_options;
  analysis_options.targets = input.plan.targets;
  auto after = verify::analyze(venv, manifests, system, analysis_options);
  if (!after) {
    failures.push_back("cannot read the venv after the changes: " + after.error().message);
    return failures;
  }
  report.targets = judge_targets(*after, input.plan, input.installed);
  for (const verify::Finding& finding : report.targets.failures) {
    failures.push_back(finding.message);
  }

  // Every shared library the transaction installed, and every target object whose closure
  // changed, dlopen'ed in a child.
  std::set<fs::path> to_load;
  for (const StagedWheel& wheel : input.staged) {
    for (const wheel::InstalledFile& file : wheel.install.files) {
      fs::path path = venv.root / file.path;
      if (!dist::looks_like_shared_object(path.filename().string())) continue;
      auto info = elf::read_elf(path);
      if (info && info->has_value() && (*info)->kind == elf::ElfKind::shared) to_load.insert(path);
    }
  }
  for (const auto& [root, signature] : closure_signatures(*after, system)) {
    auto before = input.closures_before.find(root);
    if (before == input.closures_before.end() || before->second != signature) {
      to_load.insert(root);
    }
  }
  std::vector<fs::path> files(to_load.begin(), to_load.end());
  LoadCheckOptions load_options;
  load_options.timeout_seconds = options.load_timeout_s;
  load_options.helper = options.helper;
  load_options.preload = after->preloaded;
  auto loads = dlopen_in_child(files, manifests, load_options);
  if (!loads) {
    failures.push_back(loads.error().message);
  } else {
    report.loads = std::move(loads).value();
    for (const LoadResult& load : report.loads) {
      if (load.ok()) continue;
      failures.push_back(fmt::format("{} did not load ({}): {}", after->display_path(load.path),
                                     to_string(load.status), load.message));
    }
  }

  if (!options.verify_cmd.empty()) {
    auto outcome = run_with_timeout(options.verify_cmd, activated_environment(venv),
                                    options.verify_cmd_timeout_s);
    if (!outcome) {
      failures.push_back(outcome.error().message);
    } else {
      report.verify_cmd = *outcome;
      std::string command = options.verify_cmd.back();
      if (outcome->timed_out) {
        failures.push_back(fmt::format("--verify-cmd `{}` did not finish within {} s", command,
                                       options.verify_cmd_timeout_s));
      } else if (outcome->exit_code != 0) {
        std::string tail = outcome->output;
        while (!tail.empty() && tail.back() == '\n') tail.pop_back();
        if (auto at = tail.rfind('\n'); at != std::string::npos) tail = tail.substr(at + 1);
        failures.push_back(fmt::format("--verify-cmd `{}` exited with status {}{}{}", command,
                                       outcome->exit_code, tail.empty() ? "" : ": ", tail));
      }
    }
  }
  if (options.probe && failures.empty())
    probe_after_moves(*after, manifests, options, input, report, failures);
  return failures;
}

}  // namespace

Result<ApplyReport> apply_plan(const env::Venv& venv, const VenvLock& lock, const plan::Plan& plan,
                               const manifest::Manifests& manifests, const elf::SystemView& system,
                               fetch::Downloader& downloader, const ApplyOptions& options) {
  const auto start = Clock::now();
  ApplyReport report;
  report.venv = venv.root.string();
  VENVFIX_TRY(require_no_unfinished_transaction(venv));

  // 1. The plan must describe this venv as it is now.
  auto phase = Clock::now();
  verify::Options analysis_options;
  analysis_options.targets = plan.targets;
  VENVFIX_TRY_ASSIGN(verify::Analysis before,
                     verify::analyze(venv, manifests, system, analysis_options));
  const std::string state = plan::state_digest(before);
  if (state != plan.state) {
    return make_error(ExitCode::plan_stale,
                      "the plan was made for {} in another state (plan state {}, now {}): "
                      "the venv changed since planning; make a new plan; the venv is unchanged",
                      plan.venv, plan.state.substr(0, 12), state.substr(0, 12));
  }
  if (!same_path(plan.venv, venv.root)) {
    // The state digest holds no absolute path: an identical venv elsewhere (another machine, a
    // container image) may take the plan.
    spdlog::info("the plan was made for {}; {} is in the same state, so it applies here", plan.venv,
                 venv.root.string());
  }
  report.timings.check_s = seconds_since(phase);
  if (plan.actions.empty()) {
    report.nothing_to_do = true;
    report.verified = true;
    report.timings.total_s = seconds_since(start);
    return report;
  }

  // 2. Which installed distributions leave: removed ones and those an install replaces.
  const dist::Inventory& inventory = before.inventory;
  std::set<std::size_t> leaving;
  std::vector<std::optional<std::size_t>> replaced(plan.actions.size());
  std::set<std::string> installed;
  for (std::size_t i = 0; i < plan.actions.size(); ++i) {
    const plan::Action& action = plan.actions[i];
    if (action.kind == plan::ActionKind::remove) {
      replaced[i] = find_installed(inventory, action.dist, action.version);
      if (!replaced[i]) {
        return make_error(ExitCode::plan_stale,
                          "the plan removes {} {}, which is not installed in {}; make a new "
                          "plan; the venv is unchanged",
                          action.dist, action.version, venv.root.string());
      }
    } else {
      installed.insert(pep::normalize_name(action.dist));
      replaced[i] = action.replaces
                        ? find_installed(inventory, action.replaces->dist, action.replaces->version)
                        : find_installed(inventory, action.dist, "");
    }
    if (replaced[i]) leaving.insert(*replaced[i]);
  }

  // 3. and 4. Every wheel downloaded and hash-checked, and unpacked into staging on the venv's
  // filesystem as soon as it is in the cache, before anything in the venv changes.
  phase = Clock::now();
  VENVFIX_TRY_ASSIGN(fs::path staging, make_staging_dir(venv));
  StagingGuard staging_guard(staging);
  StageOptions stage_options;
  stage_options.threads = options.stage_threads;
  if (options.unpacked_cache && !downloader.config().cache_dir.empty()) {
    stage_options.unpacked_cache = downloader.config().cache_dir / "unpacked";
    stage_options.link_mode = options.link_mode;
  }
  // A reinstall keeps the user's "I asked for this" mark (pip's REQUESTED).
  auto requested = [&](std::size_t action) {
    auto old = replaced[action];
    return old && fs::exists(inventory.distributions[*old].metadata_dir / "REQUESTED")
               ? wheel::Requested::yes
               : wheel::Requested::no;
  };
  auto fetched_and_staged =
      fetch_and_stage(venv, plan, downloader, staging, requested, stage_options);
  if (!fetched_and_staged) return unchanged(std::move(fetched_and_staged).error());
  const std::vector<FetchedWheel>& fetched = fetched_and_staged->fetched;
  const std::vector<StagedWheel>& staged = fetched_and_staged->staged;
  report.timings.download_s = fetched_and_staged->download_s;
  report.timings.stage_s = fetched_and_staged->stage_tail_s;

  // 5. What leaves the venv, the way pip uninstalls, keeping what others still own.
  ChangeSet changes;
  changes.reason = options.reason;
  changes.staging = staging;
  std::set<std::string> add;
  for (const StagedWheel& wheel : staged) {
    for (const wheel::InstalledFile& file : wheel.install.files) add.insert(file.path);
  }
  std::set<std::string> remove;
  std::map<std::size_t, std::size_t> staged_of_action;
  for (std::size_t i = 0; i < staged.size(); ++i) staged_of_action[staged[i].action] = i;
  for (std::size_t i = 0; i < plan.actions.size(); ++i) {
    const plan::Action& action = plan.actions[i];
    ActionDone done;
    done.kind = action.kind;
    done.dist = action.dist;
    done.version = action.version;
    if (auto it = staged_of_action.find(i); it != staged_of_action.end()) {
      done.files_added = staged[it->second].install.files.size();
      done.from_cache = fetched[it->second].from_cache;
    }
    if (replaced[i]) {
      const dist::Distribution& old = inventory.distributions[*replaced[i]];
      if (action.kind == plan::ActionKind::install) done.replaced = {old.name, old.version};
      Removal removal = plan_removal(venv, inventory, *replaced[i], leaving);
      // The planner's keep list (site-packages-relative) is honoured as well.
      std::set<std::string> keep(removal.kept.begin(), removal.kept.end());
      for (const std::string& path : action.keep) {
        std::string rel = venv_relative(venv, old.site_packages / path);
        if (!rel.empty()) keep.insert(rel);
      }
      for (const std::string& path : removal.remove) {
        if (keep.count(path) == 0) {
          remove.insert(path);
          ++done.files_removed;
        }
      }
      done.kept.assign(keep.begin(), keep.end());
      for (const std::string& path : removal.refused) {
        spdlog::warn("{} {} lists {}, outside the venv: left alone", old.name, old.version, path);
      }
    }
    report.actions.push_back(std::move(done));
  }
  changes.add.assign(add.begin(), add.end());
  changes.remove.assign(remove.begin(), remove.end());
  const std::map<fs::path, std::string> closures_before = closure_signatures(before, system);

  // 6. The journaled moves.
  phase = Clock::now();
  auto begun = Transaction::begin(venv, lock, std::move(changes));
  if (!begun) return unchanged(std::move(begun).error());
  staging_guard.release();  // the transaction owns staging now
  Transaction transaction = std::move(begun).value();
  if (auto status = transaction.execute(); !status) {
    return rolled_back(transaction, std::move(status).error());
  }
  report.timings.move_s = seconds_since(phase);

  // 7. Verification.
  phase = Clock::now();
  VerifyInput input{plan, staged, closures_before, installed};
  std::vector<std::string> failures =
      verify_after_moves(venv, manifests, system, options, input, report);
  report.timings.verify_s = seconds_since(phase);
  report.verified = failures.empty();
  if (!failures.empty()) {
    if (options.verify == VerifyMode::full) {
      std::string shown = failures.front();
      if (failures.size() > 1) shown += fmt::format(" (and {} more)", failures.size() - 1);
      for (const std::string& failure : failures) spdlog::error("verification: {}", failure);
      return rolled_back(transaction,
                         make_error(ExitCode::verify_failed, "verification failed: {}", shown));
    }
    for (const std::string& failure : failures) spdlog::warn("verification: {}", failure);
  }

  // 8. Commit.
  phase = Clock::now();
  auto committed = transaction.commit(options.snapshot);
  if (!committed) {
    return rolled_back(transaction, std::move(committed).error());
  }
  report.snapshot = *committed;
  report.timings.commit_s = seconds_since(phase);
  report.timings.total_s = seconds_since(start);
  return report;
}

}  // namespace venvfix::apply
