// venvfix why SONAME: who needs this soname, who provides it, where the loader finds it.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/session.hpp"
#include "venvfix/base/json_text.hpp"
#include "venvfix/verify/why.hpp"

namespace venvfix::cli {

namespace {

struct WhyArgs {
  std::string soname;
  std::vector<std::string> targets;
};

Result<int> run_why(const GlobalOptions& options, const WhyArgs& args) {
  VENVFIX_TRY_ASSIGN(Session session, open_session(options, HeapUse::analysis));
  verify::Options analysis_options;
  analysis_options.targets = args.targets;
  VENVFIX_TRY_ASSIGN(verify::Analysis analysis,
                     verify::analyze(std::move(session.venv), session.manifests, session.system,
                                     analysis_options));
  verify::WhyReport report = verify::explain_soname(analysis, session.manifests, args.soname);
  if (options.json) {
    std::cout << json_text(verify::why_json(analysis, report), 2) << "\n";
  } else {
    verify::print_why_report(analysis, report, std::cout,
                             stdout_wants_color() ? verify::Colors::on : verify::Colors::off);
  }
  return 0;
}

}  // namespace

void add_why_command(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<WhyArgs>();
  CLI::App* sub = app.add_subcommand(
      "why", "Who needs this soname, who provides it, and where the loader finds it");
  sub->add_option("soname", args->soname, "A soname, e.g. libcudnn.so.9")->required();
  sub->add_option("--target", args->targets, "Distribution whose libraries to follow (repeatable)");
  sub->callback([&context, args] {
    context.run = [&context, args] { return run_why(context.options, *args); };
  });
}

}  // namespace venvfix::cli
