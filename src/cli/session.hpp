// What every command that reads a venv needs first: the venv, the manifests and the loader's
// view of the system, built from the global options.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/global_options.hpp"
#include "venvfix/elf/resolver.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/manifest/manifests.hpp"
#include "venvfix/plan/document.hpp"
#include "venvfix/verify/probe.hpp"

namespace venvfix::cli {

struct Session {
  env::Venv venv;
  manifest::Manifests manifests;
  elf::SystemView system;
};

// How a command's heap is laid out. An analysis (doctor, why, plan, run, the guard) allocates
// tens of MiB of tables and exits: its heap grows in transparent huge pages, which saves most of
// its page faults (reserve_huge_page_heap); run's and the guard's rollbacks write little. A
// command whose work is writing the venv (apply, uninstall) keeps glibc's defaults: memory freed
// into such a heap stays resident, and apply is held to a peak RSS.
enum class HeapUse { analysis, transaction };

Result<Session> open_session(const GlobalOptions& options, HeapUse heap);

// A plan document from a file (`-`: standard input); unreadable or invalid: ExitCode::usage.
Result<plan::Plan> read_plan_file(const std::string& file);

// The probe's loader view from the global options (the same --ld-cache and
// --use-ld-library-path the static analysis resolves with); statement and timeout unset.
verify::ProbeOptions probe_view(const GlobalOptions& options);

// --no-probe, --probe-cmd and --probe-timeout of apply, uninstall and run.
struct TransactionProbeArgs {
  bool no_probe = false;
  std::optional<std::string> probe_cmd;
  int probe_timeout = 120;
};
void add_transaction_probe_options(CLI::App& sub, TransactionProbeArgs& args);
// The probe those commands verify with; nullopt with --no-probe.
std::optional<verify::ProbeOptions> transaction_probe(const GlobalOptions& options,
                                                      const TransactionProbeArgs& args);

}  // namespace venvfix::cli
