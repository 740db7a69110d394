// The verification and commit phases of apply_plan (phases.hpp): the loader rules, dlopen of
// what changed in a child, --verify-cmd, the probe; then commit or roll back.
#include <sys/stat.h>

#include <set>

#include <spdlog/spdlog.h>

#include "apply/stage_hashes.hpp"
#include "venvfix/apply/load_verdicts.hpp"
#include "venvfix/apply/phases.hpp"
#include "venvfix/dist/scan.hpp"
#include "venvfix/elf/elf_file.hpp"

extern char** environ;

namespace venvfix::apply {

namespace {

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
    if (!input.plan.unresolved.empty()) {
      spdlog::warn("probe: {}", finding.message);
    } else {
      failures.push_back("probe: " + finding.message);
    }
  }
}

// Every shared library the transaction installed, and every target object whose closure
// changed: what the dlopen check loads.
std::vector<fs::path> files_to_load(const env::Venv& venv, const verify::Analysis& after,
                                    const elf::SystemView& system, const VerifyInput& input) {
  std::set<fs::path> to_load;
  for (const StagedWheel& wheel : input.staged) {
    for (const wheel::InstalledFile& file : wheel.install.files) {
      fs::path path = venv.root / file.path;
      if (!dist::looks_like_shared_object(path.filename().string())) continue;
      auto info = elf::read_elf(path);
      if (info && info->has_value() && (*info)->kind == elf::ElfKind::shared) to_load.insert(path);
    }
  }
  for (const auto& [root, signature] : closure_signatures(after, system)) {
    auto before = input.closures_before.find(root);
    if (before == input.closures_before.end() || before->second != signature) {
      to_load.insert(root);
    }
  }
  return {to_load.begin(), to_load.end()};
}

// What staging checked against RECORD, by the identity the shared objects have after the
// moves: a kept load verdict (load_verdicts.hpp) knows them by content.
KnownContents staged_contents(const env::Venv& venv, const VerifyInput& input) {
  KnownContents known;
  for (const StagedWheel& wheel : input.staged) {
    for (const wheel::InstalledFile& file : wheel.install.files) {
      if (!dist::looks_like_shared_object(fs::path(file.path).filename().string())) continue;
      struct stat st {};
      if (::lstat((venv.root / file.path).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      known[{st.st_dev, st.st_ino}] = {file.sha256, file.size};
    }
  }
  return known;
}

// Those files dlopen'ed in a child, or proven by a kept verdict.
void check_loads(const env::Venv& venv, const verify::Analysis& after,
                 const manifest::Manifests& manifests, const elf::SystemView& system,
                 const ApplyOptions& options, const VerifyInput& input, ApplyReport& report,
                 std::vector<std::string>& failures) {
  LoadCheckOptions load_options;
  load_options.timeout_seconds = options.load_timeout_s;
  load_options.helper = options.helper;
  load_options.preload = after.preloaded;
  LoadVerdictOptions verdicts;
  verdicts.dir = input.load_verdicts;
  verdicts.reuse = !options.recheck_loads;
  verdicts.venv_root = venv.root;
  if (!verdicts.dir.empty()) verdicts.known = staged_contents(venv, input);
  auto loads = dlopen_keeping_verdicts(files_to_load(venv, after, system, input), manifests,
                                       load_options, verdicts);
  if (!loads) {
    failures.push_back(loads.error().message);
    return;
  }
  report.loads = std::move(loads).value();
  for (const LoadResult& load : report.loads) {
    if (load.ok()) continue;
    failures.push_back(fmt::format("{} did not load ({}): {}", after.display_path(load.path),
                                   to_string(load.status), load.message));
  }
}

// The user's --verify-cmd in the activated venv.
void run_verify_cmd(const env::Venv& venv, const ApplyOptions& options, ApplyReport& report,
                    std::vector<std::string>& failures) {
  auto outcome = run_with_timeout(options.verify_cmd, activated_environment(venv),
                                  options.verify_cmd_timeout_s);
  if (!outcome) {
    failures.push_back(outcome.error().message);
    return;
  }
  report.verify_cmd = *outcome;
  const std::string& command = options.verify_cmd.back();
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

}  // namespace

std::vector<std::string> verify_after_moves(const env::Venv& venv,
                                            const manifest::Manifests& manifests,
                                            const elf::SystemView& system,
                                            const ApplyOptions& options, const VerifyInput& input,
                                            ApplyReport& report) {
  std::vector<std::string> failures;
  // Staging hashed every byte it wrote: the analysis below takes those digests from the cache.
  seed_hash_cache(venv, input.staged);
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
  check_loads(venv, *after, manifests, system, options, input, report, failures);
  if (!options.verify_cmd.empty()) run_verify_cmd(venv, options, report, failures);
  if (options.probe && failures.empty()) {
    probe_after_moves(*after, manifests, options, input, report, failures);
  }
  return failures;
}

Error rolled_back(txn::Transaction& transaction, Error error) {
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

Status commit_or_roll_back(txn::Transaction& transaction, const std::vector<std::string>& failures,
                           const ApplyOptions& options, ApplyReport& report) {
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
  auto committed = transaction.commit(options.snapshot);
  if (!committed) return rolled_back(transaction, std::move(committed).error());
  report.snapshot = *committed;
  return ok();
}

}  // namespace venvfix::apply
