// venvfix doctor: inventory and health report of the venv.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/session.hpp"
#include "venvfix/verify/report.hpp"

namespace venvfix::cli {

namespace {

struct DoctorArgs {
  bool verify_hashes = false;
  bool strict = false;
  std::vector<std::string> targets;
};

Result<int> run_doctor(const GlobalOptions& options, const DoctorArgs& args) {
  VENVFIX_TRY_ASSIGN(Session session, open_session(options));
  verify::Options analysis_options;
  analysis_options.targets = args.targets;
  analysis_options.hashes =
      args.verify_hashes ? verify::HashCheck::everything : verify::HashCheck::target_libraries;
  VENVFIX_TRY_ASSIGN(verify::Analysis analysis,
                     verify::analyze(std::move(session.venv), session.manifests, session.system,
                                     analysis_options));
  if (options.json) {
    std::cout << verify::doctor_json(analysis).dump(2) << "\n";
  } else {
    verify::print_doctor_report(analysis, std::cout,
                                stdout_wants_color() ? verify::Colors::on : verify::Colors::off);
  }
  return analysis.has_problems(args.strict) ? static_cast<int>(ExitCode::problems) : 0;
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
  sub->footer("Exit codes: 0 healthy, 3 problems found (--strict: or warnings), 1/2 errors.");
  sub->callback([&context, args] {
    context.run = [&context, args] { return run_doctor(context.options, *args); };
  });
}

}  // namespace venvfix::cli
