// venvfix cache dir|info|prune: where the download cache is, what it holds, and removing what
// was not used for a while (include/venvfix/apply/cache_maintenance.hpp). Reads no venv.
#include <cmath>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "venvfix/apply/cache_maintenance.hpp"
#include "venvfix/base/json_text.hpp"

namespace venvfix::cli {

namespace {

struct PruneArgs {
  double unused_for_days = 30;
  bool dry_run = false;
  bool wait = false;
};

Result<fs::path> cache_root(const GlobalOptions& options) {
  fs::path root = options.index_config().cache_dir;
  if (root.empty()) {
    return make_error(ExitCode::usage,
                      "no download cache: set --cache-dir, VENVFIX_CACHE_DIR, XDG_CACHE_HOME or "
                      "HOME");
  }
  return root;
}

Result<int> run_cache_dir(const GlobalOptions& options) {
  VENVFIX_TRY_ASSIGN(const fs::path root, cache_root(options));
  if (options.json) {
    std::cout << json_text(nlohmann::json{{"cache_dir", root.string()}}, 2) << "\n";
  } else {
    std::cout << root.string() << "\n";
  }
  return 0;
}

Result<int> run_cache_info(const GlobalOptions& options) {
  VENVFIX_TRY_ASSIGN(const fs::path root, cache_root(options));
  const apply::CacheUsage usage = apply::cache_usage(root);
  if (options.json) {
    std::cout << json_text(apply::cache_usage_json(usage), 2) << "\n";
  } else {
    apply::print_cache_usage(usage, std::cout);
  }
  return 0;
}

Result<int> run_cache_prune(const GlobalOptions& options, const PruneArgs& args) {
  VENVFIX_TRY_ASSIGN(const fs::path root, cache_root(options));
  apply::CachePruneOptions prune;
  prune.unused_for = std::chrono::seconds(std::llround(args.unused_for_days * 86400.0));
  prune.dry_run = args.dry_run;
  prune.wait = args.wait;
  VENVFIX_TRY_ASSIGN(const apply::CachePruneReport report, apply::prune_cache(root, prune));
  if (options.json) {
    std::cout << json_text(apply::prune_report_json(report), 2) << "\n";
  } else {
    apply::print_prune_report(report, std::cout);
  }
  return 0;
}

}  // namespace

void add_cache_command(CLI::App& app, CommandContext& context) {
  CLI::App* cache = app.add_subcommand("cache", "Show or prune the download cache (no venv read)");
  cache->require_subcommand(1);
  CLI::App* dir = cache->add_subcommand("dir", "Print the download cache's directory");
  dir->callback(
      [&context] { context.run = [&context] { return run_cache_dir(context.options); }; });
  CLI::App* info = cache->add_subcommand(
      "info", "What the cache holds, per part, and how much of it only the cache holds");
  info->callback(
      [&context] { context.run = [&context] { return run_cache_info(context.options); }; });
  auto args = std::make_shared<PruneArgs>();
  CLI::App* prune = cache->add_subcommand(
      "prune",
      "Remove unpacked wheels and downloads not used for a while, and crashed writers' "
      "temporary files");
  prune
      ->add_option("--unused-for", args->unused_for_days,
                   "Days since the last use of what goes (0: everything not in use now)")
      ->check(non_negative_number())
      ->capture_default_str();
  prune->add_flag("--dry-run", args->dry_run, "Say what would go; remove nothing");
  prune->add_flag("--wait", args->wait,
                  "Wait for the venvfix processes using the cache instead of exiting 6");
  prune->footer(
      "An unpacked wheel's last use is the last apply that installed from it; a downloaded "
      "wheel's, its download (kept while an unpacked wheel links it). Exit codes: 0 done, 1 a "
      "file could not be removed, 2 bad usage, 6 the cache is in use by another venvfix (an "
      "apply, plan or fetch; --wait waits for it).");
  prune->callback([&context, args] {
    context.run = [&context, args] { return run_cache_prune(context.options, *args); };
  });
}

}  // namespace venvfix::cli
