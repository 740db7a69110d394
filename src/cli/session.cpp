#include "cli/session.hpp"

#include <cstdlib>
#include <iostream>
#include <iterator>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/heap.hpp"
#include "venvfix/txn/lock.hpp"

namespace venvfix::cli {

Result<plan::Plan> read_plan_file(const std::string& file) {
  std::string text;
  if (file == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    auto read = read_file(file, 64u << 20);
    if (!read) return make_error(ExitCode::usage, "cannot read the plan: {}", read.error().message);
    text = std::move(read).value();
  }
  return plan::parse_plan(text, file == "-" ? "standard input" : file);
}

Result<Session> open_session(const GlobalOptions& options, HeapUse heap) {
  if (heap == HeapUse::analysis) (void)reserve_huge_page_heap();  // 0 where it cannot: no harm
  VENVFIX_TRY_ASSIGN(env::Venv venv, open_environment(options));
  VENVFIX_TRY(txn::require_no_unfinished_transaction(venv));
  fs::path manifest_dir = options.manifest_dir.value_or(manifest::Manifests::default_dir());
  VENVFIX_TRY_ASSIGN(manifest::Manifests manifests, manifest::Manifests::load(manifest_dir));
  VENVFIX_TRY_ASSIGN(
      elf::SystemView system,
      elf::SystemView::host(options.use_ld_library_path ? elf::UseLdLibraryPath::yes
                                                        : elf::UseLdLibraryPath::no));
  if (options.ld_cache == "none") {
    system.cache.reset();
  } else if (!options.ld_cache.empty()) {
    auto cache = elf::LdCache::load(options.ld_cache);
    if (!cache) {
      return make_error(ExitCode::usage, "cannot use --ld-cache {}: {}", options.ld_cache,
                        cache.error().message);
    }
    system.cache = std::move(cache).value();
  }
  return Session{std::move(venv), std::move(manifests), std::move(system)};
}

verify::ProbeOptions probe_view(const GlobalOptions& options) {
  verify::ProbeOptions probe;
  probe.ld_cache = options.ld_cache;
  if (options.use_ld_library_path) {
    if (const char* value = std::getenv("LD_LIBRARY_PATH")) probe.ld_library_path = value;
  }
  return probe;
}

void add_transaction_probe_options(CLI::App& sub, TransactionProbeArgs& args) {
  sub.add_flag("--no-probe", args.no_probe,
               "Skip the last verification step: `import torch` in the venv's own interpreter");
  sub.add_option("--probe-cmd", args.probe_cmd,
                 "The Python statement that step runs instead of `import torch`");
  sub.add_option("--probe-timeout", args.probe_timeout, "Seconds that step may take (default 120)")
      ->check(positive_number());
}

std::optional<verify::ProbeOptions> transaction_probe(const GlobalOptions& options,
                                                      const TransactionProbeArgs& args) {
  if (args.no_probe) return std::nullopt;
  verify::ProbeOptions probe = probe_view(options);
  probe.statement = args.probe_cmd.value_or("");
  probe.timeout_seconds = args.probe_timeout;
  return probe;
}

}  // namespace venvfix::cli
