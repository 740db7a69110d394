#include "venvfix/verify/analysis.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>

#include <spdlog/spdlog.h>

#include "steps.hpp"
#include "venvfix/base/beside.hpp"
#include "venvfix/pep/tags.hpp"

namespace venvfix::verify {

bool Analysis::has_problems(Strict strict) const {
  return std::any_of(findings.begin(), findings.end(), [strict](const Finding& f) {
    return strict == Strict::yes || f.severity == Severity::problem;
  });
}

std::vector<std::string> Analysis::target_list() const {
  std::vector<std::string> names;
  for (const Target& target : targets) {
    names.push_back(inventory.distributions[target.dist].normalized_name);
  }
  return names;
}

std::string Analysis::target_names() const {
  return join(target_list(), ", ");
}

std::string Analysis::display_path(const fs::path& path) const {
  fs::path normal = path.lexically_normal();
  for (const fs::path& site : venv.site_packages) {
    fs::path relative = normal.lexically_relative(site);
    if (!relative.empty() && *relative.begin() != "..") return relative.string();
  }
  fs::path relative = normal.lexically_relative(venv.root);
  if (!relative.empty() && *relative.begin() != "..") return relative.string();
  return normal.string();
}

namespace {

pep::MarkerEnvironment markers_for(const env::Venv& venv, const env::HostPlatform& host) {
  pep::TargetPython target;
  target.major = venv.python.major;
  target.minor = venv.python.minor;
  target.arch = host.arch;
  target.glibc = host.glibc;
  target.musl = host.musl;
  target.full_version = venv.python.full;
  pep::MarkerEnvironment markers = pep::marker_environment_for(target);
  if (!host.release.empty()) markers.platform_release = host.release;
  if (!host.version.empty()) markers.platform_version = host.version;
  return markers;
}

}  // namespace

Result<Analysis> analyze(env::Venv venv, const manifest::Manifests& manifests,
                         const elf::SystemView& system, const Options& options) {
  // Phase timings at debug level (-vv): doctor must stay well under 0.2 s on a torch-sized venv.
  // Page faults are counted too: on a paravirtualised VM each costs several microseconds.
  auto minor_faults = [] {
    struct rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
  };
  auto started = std::chrono::steady_clock::now();
  auto phase = [&, last = started, faults = minor_faults()](std::string_view name) mutable {
    auto now = std::chrono::steady_clock::now();
    long faults_now = minor_faults();
    spdlog::debug("analysis: {} took {:.1f} ms, {} page faults", name,
                  std::chrono::duration<double, std::milli>(now - last).count(),
                  faults_now - faults);
    last = now;
    faults = faults_now;
  };
  Analysis analysis;
  analysis.venv = std::move(venv);
  analysis.host = env::detect_host();
  analysis.markers = markers_for(analysis.venv, analysis.host);
  if (options.earlier_inventory != nullptr && options.unchanged_metadata) {
    std::atomic<std::size_t> taken = 0;  // read_inventory takes each one it is told unchanged
    VENVFIX_TRY_ASSIGN(
        analysis.inventory,
        dist::read_inventory(analysis.venv, *options.earlier_inventory, [&](const fs::path& dir) {
          const bool same = options.unchanged_metadata(dir);
          if (same) ++taken;
          return same;
        }));
    spdlog::debug("analysis: {} of {} distributions read again, the others taken as read before",
                  analysis.inventory.distributions.size() - taken,
                  analysis.inventory.distributions.size());
  } else {
    VENVFIX_TRY_ASSIGN(analysis.inventory, dist::read_inventory(analysis.venv));
  }
  analysis.needed.assign(analysis.inventory.distributions.size(), false);
  phase("inventory");
  // The site-packages walk (a directory read per directory) and the file check's stat pass (a
  // stat per RECORD row) need only the venv and the inventory, which no step changes: they
  // overlap the loading check, which runs on one thread. Their futures' destructors wait for
  // them on every way out. Without a thread they run when their results are asked for.
  std::future<SiteScan> scan =
      run_beside(WhenRefused::at_first_get, [&venv = analysis.venv] { return scan_site(venv); });
  std::future<FileStatPass> file_stats = run_beside(
      WhenRefused::at_first_get, [&inventory = analysis.inventory, &venv = analysis.venv,
                                  after = options.stat_files_after, &known = options.identity_now] {
        if (after.valid()) after.wait();
        return stat_record_files(inventory, venv, known);
      });
  VENVFIX_TRY(select_targets(analysis, options));
  phase("targets");
  check_requirements(analysis, manifests);
  phase("requirements");
  check_loading(analysis, manifests, system,
                options.elf_source ? options.elf_source : std::make_shared<elf::ElfSource>());
  phase("loading");
  check_files(analysis, options, file_stats.get());
  phase("files");
  check_layout(analysis, manifests, scan.get());
  phase("layout");
  check_dist_info(analysis);
  label_layers(analysis);
  sort_findings(analysis.findings);
  return analysis;
}

}  // namespace venvfix::verify
