// venvfix doctor: inventory and health report of the venv; with --probe, the venv's own
// `import torch` as ground truth beside it.
#include <future>
#include <iostream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/session.hpp"
#include "venvfix/base/beside.hpp"
#include "venvfix/base/json_text.hpp"
#include "venvfix/guard/guard.hpp"
#include "venvfix/verify/probe.hpp"
#include "venvfix/verify/report.hpp"

namespace venvfix::cli {

namespace {

struct DoctorArgs {
  bool verify_hashes = false;
  bool strict = false;
  std::vector<std::string> targets;
  bool probe = false;
  std::optional<std::string> probe_cmd;
  int probe_timeout = 120;
};

// The statement the probe runs before the analysis says what the targets are: --probe-cmd, or
// `import torch` unless the targets named exclude torch (checked again after the analysis).
std::string early_statement(const DoctorArgs& args) {
  if (args.probe_cmd) return *args.probe_cmd;
  if (args.targets.empty()) return "import torch";
  for (const std::string& target : args.targets) {
    if (target == "torch") return "import torch";
  }
  return {};
}

Result<int> run_doctor(const GlobalOptions& options, const DoctorArgs& args) {
  VENVFIX_TRY_ASSIGN(Session session, open_session(options, HeapUse::analysis));
  // The import runs in a child while the static analysis runs here: the probe costs the
  // import, not the import plus the analysis.
  std::future<Result<verify::ProbeRun>> probe;
  std::string statement;
  if (args.probe) {
    statement = early_statement(args);
    if (statement.empty()) {
      return make_error(ExitCode::usage,
                        "doctor --probe: no import is known for the targets given; name one "
                        "with --probe-cmd 'import MODULE'");
    }
    verify::ProbeOptions probe_options = probe_view(options);
    probe_options.statement = statement;
    probe_options.timeout_seconds = args.probe_timeout;
    probe = run_beside(WhenRefused::at_first_get, [venv = session.venv, probe_options] {
      return verify::run_probe(venv, probe_options);
    });
  }
  verify::Options analysis_options;
  analysis_options.targets = args.targets;
  analysis_options.hashes =
      args.verify_hashes ? verify::HashCheck::everything : verify::HashCheck::target_libraries;
  auto analyzed =
      verify::analyze(std::move(session.venv), session.manifests, session.system, analysis_options);
  std::optional<Result<verify::ProbeRun>> ran;
  if (probe.valid()) ran.emplace(probe.get());  // joined before any return
  if (!analyzed) return std::move(analyzed).error();
  verify::Analysis& analysis = *analyzed;
  std::optional<verify::ProbeResult> judged;
  if (ran) {
    if (!args.probe_cmd && verify::default_probe_statement(analysis) != statement) {
      return make_error(ExitCode::usage,
                        "doctor --probe: no import is known for the targets ({}); name one with "
                        "--probe-cmd 'import MODULE'",
                        analysis.target_names());
    }
    if (!*ran) return std::move(*ran).error();
    judged = verify::judge_probe(std::move(**ran), analysis, session.manifests);
  }
  const verify::Colors colors = stdout_wants_color() ? verify::Colors::on : verify::Colors::off;
  // Whether pip and uv run guarded here (`venvfix guard`); a damaged guard state is said, not
  // fatal: the diagnosis stands without it.
  auto guarded = guard::status(analysis.venv);
  if (options.json) {
    const verify::GuardState guard = !guarded           ? verify::GuardState::unknown
                                     : guarded->enabled ? verify::GuardState::on
                                                        : verify::GuardState::off;
    std::cout << json_text(verify::doctor_json(analysis, judged ? &*judged : nullptr, guard), 2)
              << "\n";
  } else {
    verify::print_doctor_report(analysis, std::cout, colors);
    if (judged) verify::print_probe_report(*judged, std::cout, colors);
    if (!guarded) {
      std::cout << "guard: unknown (" << guarded.error().message << ")\n";
    } else {
      std::cout << (guarded->enabled ? "guard: on (pip and uv changes run under `venvfix run "
                                       "--snapshot`)\n"
                                     : "guard: off (`venvfix guard enable` guards pip and uv)\n");
    }
  }
  const verify::Strict strict = args.strict ? verify::Strict::yes : verify::Strict::no;
  bool problems = analysis.has_problems(strict) || (judged && judged->has_problems(strict));
  return problems ? static_cast<int>(ExitCode::problems) : 0;
}

}  // namespace

void add_doctor_command(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<DoctorArgs>();
  CLI::App* sub = app.add_subcommand("doctor", "Inventory and health report of the venv");
  sub->add_flag("--verify-hashes", args->verify_hashes,
                "Check the sha256 of every file against its RECORD (target libraries always are)");
  sub->add_flag("--strict", args->strict, "Exit 3 on warnings too");
  sub->add_option("--target", args->targets,
                  "Distribution whose libraries must load (repeatable; default: torch when "
                  "installed, else every distribution holding ELF objects)");
  sub->add_flag("--probe", args->probe,
                "Also run `import torch` in the venv's interpreter (child process, clean "
                "environment, same loader view) and compare what it maps with the static answer");
  sub->add_option("--probe-cmd", args->probe_cmd,
                  "The Python statement the probe runs instead of `import torch` (implies --probe)")
      ->each([args](const std::string&) { args->probe = true; });
  sub->add_option("--probe-timeout", args->probe_timeout,
                  "Seconds the probe may take (default 120)")
      ->check(positive_number());
  sub->footer(
      "Exit codes: 0 healthy, 3 problems found (--strict: or warnings; --probe: or the import "
      "failed), 1/2 errors.");
  sub->callback([&context, args] {
    context.run = [&context, args] { return run_doctor(context.options, *args); };
  });
}

}  // namespace venvfix::cli
