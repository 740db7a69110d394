// venvfix's entry point: parse, call, print, map errors to exit codes. Nothing else.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "venvfix/base/log.hpp"

namespace venvfix::cli {

bool stdout_wants_color() {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color) return false;
  return ::isatty(STDOUT_FILENO) == 1;
}

namespace {

int report_error(const Error& error, const GlobalOptions& options) {
  std::fprintf(stderr, "venvfix: error: %s\n", error.message.c_str());
  if (options.json) {
    nlohmann::json document = {{"schema", "venvfix-error/1"},
                               {"error", error.message},
                               {"exit_code", static_cast<int>(error.code)}};
    std::cout << document.dump(2) << "\n";
  }
  return static_cast<int>(error.code);
}

}  // namespace
}  // namespace venvfix::cli

int main(int argc, char** argv) {
  using namespace venvfix;
  using namespace venvfix::cli;

  CLI::App app{
      "venvfix: diagnose and repair Python virtual environments whose native libraries "
      "were broken by package operations"};
  app.set_version_flag("--version", std::string("venvfix ") + VENVFIX_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  app.footer(
      "Exit codes: 0 success/healthy, 1 error, 2 bad usage or input, 3 problems found or "
      "actions needed,\n4 network/index failure, 5 verification failed (rolled back), 6 venv "
      "locked or needs recover,\n7 plan no longer matches the venv.");

  CommandContext context;
  add_global_options(app, context.options);
  add_doctor_command(app, context);
  add_why_command(app, context);
  add_plan_command(app, context);
  add_snapshot_command(app, context);
  add_rollback_command(app, context);
  add_recover_command(app, context);
  add_run_command(app, context);
  add_apply_command(app, context);
  add_uninstall_command(app, context);
  add_load_check_command(app, context);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : static_cast<int>(ExitCode::usage);
  }

  setup_logging(context.options.verbosity(), Color::automatic);
  if (!context.run) return static_cast<int>(ExitCode::usage);
  Result<int> result = context.run();
  if (!result) return report_error(result.error(), context.options);
  return *result;
}
