// The phases of apply_plan before the verification (phases.hpp): the plan checked against the
// venv, what leaves, fetch and stage, the change set, the re-check, the journaled moves.
#include <spdlog/spdlog.h>

#include "venvfix/apply/phases.hpp"
#include "venvfix/apply/removal.hpp"
#include "venvfix/fetch/cache_layout.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/plan/planner.hpp"
#include "venvfix/verify/analysis.hpp"

namespace venvfix::apply {

namespace {

Error unchanged(Error error) {
  error.message += "; the venv is unchanged";
  return error;
}

bool same_path(const fs::path& a, const fs::path& b) {
  if (a.lexically_normal() == b.lexically_normal()) return true;
  std::error_code error;
  return fs::equivalent(a, b, error);
}

// The installed distribution `name` (and `version`, when given and installed; else any).
// The installed distribution of that name (and version, when given; else any version) in the
// environment's own layer: apply never changes a base prefix or a system distribution.
std::optional<std::size_t> find_installed(const env::Venv& venv, const dist::Inventory& inventory,
                                          std::string_view name, std::string_view version) {
  const std::string normalized = pep::normalize_name(name);
  std::optional<std::size_t> any;
  for (std::size_t i = 0; i < inventory.distributions.size(); ++i) {
    const dist::Distribution& dist = inventory.distributions[i];
    if (dist.normalized_name != normalized || !verify::layer_label(venv, dist).empty()) continue;
    if (version.empty() || dist.version == version) return i;
    if (!any) any = i;
  }
  return any;
}

// The files distribution `old` takes out of the venv for `action` into `remove`, counted and
// the kept ones listed in `done`.
void take_out(const env::Venv& venv, const dist::Inventory& inventory, std::size_t old,
              const Departures& departures, const plan::Action& action, ActionDone& done,
              std::set<std::string>& remove) {
  const dist::Distribution& dist = inventory.distributions[old];
  if (plan::kind_of(action) == plan::ActionKind::install) done.replaced = {dist.name, dist.version};
  Removal removal = plan_removal(venv, inventory, old, departures.leaving);
  // The planner's keep list (site-packages-relative) is honoured as well.
  std::set<std::string> keep(removal.kept.begin(), removal.kept.end());
  if (const auto* removal_action = std::get_if<plan::Remove>(&action)) {
    for (const std::string& path : removal_action->keep) {
      std::string rel = venv_relative(venv, dist.site_packages / path);
      if (!rel.empty()) keep.insert(rel);
    }
  }
  for (const std::string& path : removal.remove) {
    if (keep.count(path) == 0) {
      remove.insert(path);
      ++done.files_removed;
    }
  }
  done.kept.assign(keep.begin(), keep.end());
  for (const std::string& path : removal.refused) {
    spdlog::warn("{} {} lists {}, outside the venv: left alone", dist.name, dist.version, path);
  }
}

}  // namespace

StagingGuard::~StagingGuard() {
  if (m_dir.empty()) return;
  std::error_code error;
  fs::remove_all(m_dir, error);
  if (error) spdlog::warn("cannot remove {}: {}", m_dir.string(), error.message());
}

Result<verify::Analysis> check_plan_current(const env::Venv& venv, const plan::Plan& plan,
                                            const manifest::Manifests& manifests,
                                            const elf::SystemView& system) {
  verify::Options analysis_options;
  analysis_options.targets = plan.targets;
  VENVFIX_TRY_ASSIGN(verify::Analysis before,
                     verify::analyze(venv, manifests, system, analysis_options));
  const std::string state = plan::state_digest(before);
  if (state != plan.state) {
    // A plan of an older venvfix carries no per-distribution state: only the digests differ.
    const std::string what =
        plan.state_dists.empty()
            ? fmt::format("plan state {}, now {}", plan.state.substr(0, 12), state.substr(0, 12))
            : plan::describe_drift(plan.state_dists, plan::state_by_distribution(before));
    return make_error(ExitCode::plan_stale,
                      "{} is not in the state the plan was made from ({}): the venv changed "
                      "since planning; make a new plan; the venv is unchanged",
                      venv.root.string(), what);
  }
  if (!same_path(plan.venv, venv.root)) {
    // The state digest holds no absolute path: an identical venv elsewhere (another machine, a
    // container image) may take the plan.
    spdlog::info("the plan was made for {}; {} is in the same state, so it applies here", plan.venv,
                 venv.root.string());
  }
  return before;
}

Result<Departures> departing_distributions(const env::Venv& venv, const dist::Inventory& inventory,
                                           const plan::Plan& plan) {
  Departures out;
  out.replaced.resize(plan.actions.size());
  for (std::size_t i = 0; i < plan.actions.size(); ++i) {
    if (const auto* remove = std::get_if<plan::Remove>(&plan.actions[i])) {
      out.replaced[i] = find_installed(venv, inventory, remove->dist, remove->version);
      if (!out.replaced[i]) {
        return make_error(ExitCode::plan_stale,
                          "the plan removes {} {}, which is not installed in {} itself (a base "
                          "prefix or the system's packages are never changed); make a new plan; "
                          "the venv is unchanged",
                          remove->dist, remove->version, venv.root.string());
      }
    } else {
      const auto& install = *std::get_if<plan::Install>(&plan.actions[i]);
      out.installed.insert(pep::normalize_name(install.dist));
      out.replaced[i] = install.replaces ? find_installed(venv, inventory, install.replaces->dist,
                                                          install.replaces->version)
                                         : find_installed(venv, inventory, install.dist, "");
    }
    if (out.replaced[i]) out.leaving.insert(*out.replaced[i]);
  }
  return out;
}

Result<FetchedAndStaged> stage_plan(const env::Venv& venv, const plan::Plan& plan,
                                    const dist::Inventory& inventory, const Departures& departures,
                                    fetch::Downloader& downloader, const fs::path& staging,
                                    const ApplyOptions& options) {
  StageOptions stage_options;
  stage_options.threads = options.stage_threads;
  stage_options.sources = options.sources;
  if (options.unpacked_cache && !downloader.config().cache_dir.empty()) {
    stage_options.unpacked_cache = downloader.config().cache_dir / fetch::cache_layout::unpacked;
    stage_options.link_mode = options.link_mode;
  }
  // A reinstall keeps the user's "I asked for this" mark (pip's REQUESTED).
  auto requested = [&](std::size_t action) {
    const auto& old = departures.replaced[action];
    std::error_code ignored;
    return old && fs::exists(inventory.distributions[*old].metadata_dir / "REQUESTED", ignored)
               ? wheel::Requested::yes
               : wheel::Requested::no;
  };
  auto staged = fetch_and_stage(venv, plan, downloader, staging, requested, stage_options);
  if (!staged) return unchanged(std::move(staged).error());
  return staged;
}

txn::ChangeSet build_change_set(const env::Venv& venv, const dist::Inventory& inventory,
                                const plan::Plan& plan, const Departures& departures,
                                const FetchedAndStaged& staged, const fs::path& staging,
                                const ApplyOptions& options, std::vector<ActionDone>& done) {
  txn::ChangeSet changes;
  changes.reason = options.reason;
  changes.staging = staging;
  std::set<std::string> add;
  std::map<std::size_t, std::size_t> staged_of_action;
  for (std::size_t i = 0; i < staged.staged.size(); ++i) {
    staged_of_action[staged.staged[i].action] = i;
    for (const wheel::InstalledFile& file : staged.staged[i].install.files) add.insert(file.path);
  }
  std::set<std::string> remove;
  for (std::size_t i = 0; i < plan.actions.size(); ++i) {
    const plan::Action& action = plan.actions[i];
    ActionDone entry;
    entry.kind = plan::kind_of(action);
    entry.dist = plan::dist_of(action);
    entry.version = plan::version_of(action);
    if (auto it = staged_of_action.find(i); it != staged_of_action.end()) {
      entry.files_added = staged.staged[it->second].install.files.size();
      entry.from_cache = staged.fetched[it->second].from_cache;
    }
    if (departures.replaced[i]) {
      take_out(venv, inventory, *departures.replaced[i], departures, action, entry, remove);
    }
    done.push_back(std::move(entry));
  }
  changes.add.assign(add.begin(), add.end());
  changes.remove.assign(remove.begin(), remove.end());
  return changes;
}

Status recheck_venv(const env::Venv& venv, const VenvStamp& at_start) {
  VENVFIX_TRY_ASSIGN(VenvStamp now, stamp_venv(venv));
  if (now == at_start) return ok();
  return make_error(ExitCode::plan_stale,
                    "{} changed while venvfix fetched and staged the wheels (another installer "
                    "ran: {}); nothing was moved; make a new plan",
                    venv.root.string(), describe_stamp_change(at_start, now));
}

Result<txn::Transaction> move(const env::Venv& venv, const txn::VenvLock& lock,
                              const txn::ChangeSet& changes, StagingGuard& staging) {
  auto begun = txn::Transaction::begin(venv, lock, changes);
  if (!begun) return unchanged(std::move(begun).error());
  staging.release();
  txn::Transaction transaction = std::move(begun).value();
  if (auto status = transaction.execute(); !status) {
    return rolled_back(transaction, std::move(status).error());
  }
  return transaction;
}

}  // namespace venvfix::apply
