// venvfix fetch PLAN --dest DIR: the plan's wheels into a wheelhouse a fleet serves (plan once,
// apply on every host with `apply PLAN --find-links URL --offline`).
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/session.hpp"
#include "venvfix/apply/wheelhouse.hpp"
#include "venvfix/base/json_text.hpp"
#include "venvfix/index/client.hpp"

namespace venvfix::cli {

namespace {

struct FetchArgs {
  std::string plan_file;
  std::string dest;
};

Result<int> run_fetch(const GlobalOptions& options, const FetchArgs& args) {
  VENVFIX_TRY_ASSIGN(plan::Plan plan, read_plan_file(args.plan_file));
  index::IndexClient index(options.index_config());
  VENVFIX_TRY_ASSIGN(apply::WheelSources sources, apply::find_links_sources(plan, index));
  VENVFIX_TRY_ASSIGN(apply::WheelhouseReport report,
                     apply::fill_wheelhouse(plan, index.downloader(), args.dest, sources));
  if (options.json) {
    std::cout << json_text(apply::wheelhouse_json(report), 2) << "\n";
  } else {
    apply::print_wheelhouse_report(report, std::cout);
  }
  return 0;
}

}  // namespace

void add_fetch_command(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<FetchArgs>();
  CLI::App* sub = app.add_subcommand(
      "fetch", "Download a plan's wheels into a directory to serve to other hosts (a wheelhouse)");
  sub->add_option("plan", args->plan_file, "A plan from `venvfix plan -o FILE` ('-': stdin)")
      ->required();
  sub->add_option("--dest", args->dest,
                  "The directory to write the wheels and their index.html into")
      ->required();
  sub->footer(
      "Reads no venv. Each wheel is checked against the plan's sha256 and renamed into DIR once "
      "complete; DIR/index.html lists every wheel there. Exit codes: 0 done, 2 bad plan, "
      "4 download failed, 1 DIR not writable.");
  sub->callback([&context, args] {
    context.run = [&context, args] { return run_fetch(context.options, *args); };
  });
}

}  // namespace venvfix::cli
