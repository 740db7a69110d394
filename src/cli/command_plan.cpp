// venvfix plan: compute the repair plan (changes nothing in the venv).
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/session.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/plan/planner.hpp"

namespace venvfix::cli {

namespace {

struct PlanArgs {
  std::optional<fs::path> output;
  bool remove_foreign_cuda = false;
  std::vector<std::string> uninstall;
  std::vector<std::string> targets;
};

void print_table(const plan::Plan& plan, std::ostream& out) {
  out << "venvfix plan for " << plan.venv
      << " (targets: " << (plan.targets.empty() ? std::string("none") : join(plan.targets, ", "))
      << ")\n";
  if (plan.targets.empty() && plan.actions.empty()) {
    out << "nothing to check: no torch and no distribution with ELF objects\n";
    return;
  }
  if (plan.actions.empty()) {
    out << (plan.unresolved.empty() ? "nothing to do\n" : "no action can help:\n");
  } else {
    std::size_t dist_width = 12;
    std::size_t version_width = 7;
    for (const plan::Action& action : plan.actions) {
      dist_width = std::max(dist_width, plan::dist_of(action).size());
      version_width = std::max(version_width, plan::version_of(action).size());
    }
    out << fmt::format("\n{:<8} {:<{}} {:<{}} {:>10}  {}\n", "ACTION", "DISTRIBUTION", dist_width,
                       "VERSION", version_width, "SIZE", "WHY");
    std::uint64_t total = 0;
    for (const plan::Action& action : plan.actions) {
      const auto* install = std::get_if<plan::Install>(&action);
      std::string size = install != nullptr ? human_size(install->size) : "";
      total += install != nullptr ? install->size : 0;
      out << fmt::format("{:<8} {:<{}} {:<{}} {:>10}  {}\n", plan::to_string(plan::kind_of(action)),
                         plan::dist_of(action), dist_width, plan::version_of(action), version_width,
                         size, plan::reason_of(action));
    }
    out << fmt::format("\n{} action{}, {} to download\n", plan.actions.size(),
                       plan.actions.size() == 1 ? "" : "s", human_size(total));
  }
  if (!plan.unresolved.empty()) {
    out << "\nnot fixed by this plan:\n";
    for (const plan::Unresolved& entry : plan.unresolved) {
      out << "  - " << plan::message_of(entry) << "\n";
    }
  }
  if (!plan.notes.empty()) {
    out << "\nnotes:\n";
    for (const plan::Note& note : plan.notes) out << "  - " << note.message << "\n";
  }
}

Result<int> run_plan(const GlobalOptions& options, const PlanArgs& args) {
  VENVFIX_TRY_ASSIGN(Session session, open_session(options, HeapUse::analysis));
  verify::Options analysis_options;
  analysis_options.targets = args.targets;
  VENVFIX_TRY_ASSIGN(verify::Analysis analysis,
                     verify::analyze(std::move(session.venv), session.manifests, session.system,
                                     analysis_options));
  index::IndexClient client(options.index_config());
  plan::PlanOptions plan_options;
  plan_options.remove_foreign_cuda = args.remove_foreign_cuda;
  plan_options.uninstall = args.uninstall;
  VENVFIX_TRY_ASSIGN(plan::Plan plan,
                     plan::make_plan(analysis, session.manifests, client, plan_options));
  std::string text = plan::to_text(plan);
  if (args.output) {
    if (Status written = write_file_atomic(*args.output, text); !written) {
      return make_error(ExitCode::error, "cannot write the plan to {}: {}", args.output->string(),
                        written.error().message);
    }
  }
  if (options.json) {
    std::cout << text;
  } else {
    print_table(plan, std::cout);
    if (args.output) std::cout << "\nplan written to " << args.output->string() << "\n";
  }
  bool clean = plan.actions.empty() && plan.unresolved.empty();
  return clean ? 0 : static_cast<int>(ExitCode::problems);
}

}  // namespace

void add_plan_command(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* sub = app.add_subcommand("plan", "Compute the repair plan (changes nothing)");
  sub->add_option("-o,--output", args->output, "Also write the plan document to FILE (atomically)");
  sub->add_flag("--remove-foreign-cuda", args->remove_foreign_cuda,
                "Also remove distributions of another CUDA major than the target's, when every "
                "target still resolves");
  sub->add_option("--uninstall", args->uninstall,
                  "Plan uninstalling these distributions without breaking a target (the removal "
                  "plus the installs that repair what it breaks)")
      ->expected(1, -1);
  sub->add_option("--target", args->targets,
                  "Distribution whose libraries must load (repeatable; default: torch when "
                  "installed, else every distribution holding ELF objects)");
  sub->footer(
      "Exit codes: 0 nothing to do, 3 actions planned (or problems no action fixes), 4 index "
      "failure, 2 bad input.");
  sub->callback([&context, args] {
    context.run = [&context, args] { return run_plan(context.options, *args); };
  });
}

}  // namespace venvfix::cli
