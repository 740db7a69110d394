// venvfix's entry point: parse, call, print, map errors to exit codes. Nothing else. Every way
// out is an exit code of the contract and, with --json, exactly one JSON document on stdout: a
// bad command line and an unexpected exception too end as one sentence and `venvfix-error/1`.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "venvfix/base/json_text.hpp"
#include "venvfix/base/log.hpp"
#include "venvfix/base/shared_library.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/manifest/manifests.hpp"

namespace venvfix::cli {

bool stdout_wants_color() {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color) return false;
  return ::isatty(STDOUT_FILENO) == 1;
}

namespace {

int report_error(const Error& error, bool json) {
  std::fprintf(stderr, "venvfix: error: %s\n", error.message.c_str());
  if (json) {
    nlohmann::json document = {{"schema", "venvfix-error/1"},
                               {"error", error.message},
                               {"exit_code", static_cast<int>(error.code)}};
    std::cout << json_text(document, 2) << "\n";
  }
  return static_cast<int>(error.code);
}

// --json anywhere before `--` (what follows belongs to `run`'s command): known even when the
// command line did not parse.
bool json_requested(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) return false;
    if (std::strcmp(argv[i], "--json") == 0) return true;
  }
  return false;
}

// The commands of `app` for messages, hidden ones left out.
std::string command_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub :
       app.get_subcommands([](CLI::App* s) { return !s->get_group().empty(); })) {
    names.push_back(sub->get_name());
  }
  return join(names, ", ");
}

// The error of a command line CLI11 refused, in venvfix's words where it has them: the
// deepest command chosen, an unknown or missing command, CLI11's sentence otherwise.
Error usage_error(CLI::App& app, const CLI::ParseError& e) {
  std::string message = e.what();
  while (!message.empty() && (message.back() == '\n' || message.back() == '.')) message.pop_back();
  if (!message.empty() && message.front() >= 'A' && message.front() <= 'Z' &&
      message.compare(0, 2, "A ") != 0) {
    message.front() = static_cast<char>(message.front() - 'A' + 'a');
  }
  CLI::App* leaf = &app;
  std::string path = "venvfix";
  while (!leaf->get_subcommands().empty()) {
    leaf = leaf->get_subcommands().front();
    path += " " + leaf->get_name();
  }
  const bool has_commands = !command_names(*leaf).empty();
  if (has_commands && leaf->get_subcommands().empty()) {
    for (const std::string& word : app.remaining(true)) {  // fallthrough: any level
      if (!word.empty() && word.front() != '-') {
        std::string name = leaf == &app ? word : path.substr(8) + " " + word;
        return make_error(ExitCode::usage, "unknown command '{}' (the commands: {})", name,
                          command_names(*leaf));
      }
    }
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
      return make_error(ExitCode::usage, "{}: no command given (the commands: {})", path,
                        command_names(*leaf));
    }
  }
  return make_error(ExitCode::usage, "{}: {} (see `{} --help`)", path, message, path);
}

// "venvfix 0.1.0 (manifests of 2026-12-02, /usr/share/venvfix/manifests)": the version, and
// how current the knowledge it plans with is.
std::string version_text() {
  const std::filesystem::path dir = manifest::Manifests::default_dir();
  auto manifests = manifest::Manifests::load(dir);
  if (!manifests) {
    return fmt::format("venvfix {} (no usable manifests: {})", VENVFIX_VERSION,
                       manifests.error().message);
  }
  const std::string& date = manifests->updated();
  return fmt::format("venvfix {} (manifests of {}, {})", VENVFIX_VERSION,
                     date.empty() ? "an unknown date" : date, dir.string());
}

// Whether the fatal error reporter writes the error document too (set before anything runs).
bool g_fatal_error_as_json = false;

void report_fatal_error(const Error& error) {
  report_error(error, g_fatal_error_as_json);
  std::cout.flush();
}

int run(int argc, char** argv) {
  g_fatal_error_as_json = json_requested(argc, argv);
  set_fatal_error_reporter(report_fatal_error);
  CLI::App app{
      "venvfix: diagnose and repair Python virtual environments whose native libraries "
      "were broken by package operations"};
  app.set_version_flag("--version", version_text);
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
  add_fetch_command(app, context);
  add_cache_command(app, context);
  add_uninstall_command(app, context);
  add_guard_command(app, context);
  add_load_check_command(app, context);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return report_error(usage_error(app, e), context.options.json || json_requested(argc, argv));
  }

  setup_logging(context.options.verbosity(), Color::automatic);
  if (!context.run) {
    return report_error(make_error(ExitCode::usage, "venvfix: no command given (the commands: {})",
                                   command_names(app)),
                        context.options.json);
  }
  Result<int> result = context.run();
  if (!result) return report_error(result.error(), context.options.json);
  return *result;
}

}  // namespace
}  // namespace venvfix::cli

// The handlers' own report is the last resort: should it throw (memory gone), std::terminate is
// the right end.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  using namespace venvfix;
  // Library code returns errors as values; whatever escapes anyway (a std::bad_alloc, a bug)
  // still ends as one sentence, exit 1 and, with --json, an error document.
  try {
    return cli::run(argc, argv);
  } catch (const std::exception& e) {
    return cli::report_error(
        make_error(ExitCode::error, "unexpected error (a bug in venvfix): {}", e.what()),
        cli::json_requested(argc, argv));
  } catch (...) {
    return cli::report_error(
        make_error(ExitCode::error, "unexpected error (a bug in venvfix): an unknown exception"),
        cli::json_requested(argc, argv));
  }
}
