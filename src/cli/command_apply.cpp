// venvfix apply: carry out a plan as one transaction. Also the hidden helper the transaction's
// load check runs (`venvfix __load-check`, include/venvfix/txn/load_check.hpp).
#include <memory>

#include "cli/command.hpp"
#include "venvfix/txn/load_check.hpp"

namespace venvfix::cli {

namespace {

struct LoadCheckArgs {
  std::vector<std::string> preload;
  std::vector<std::string> files;
};

void add_load_check_helper(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<LoadCheckArgs>();
  CLI::App* sub = app.add_subcommand("__load-check", "dlopen each FILE in a process of its own");
  sub->group("");  // internal: not in --help
  sub->add_option("--preload", args->preload, "Load first with RTLD_GLOBAL (failures ignored)");
  sub->add_option("files", args->files, "Libraries to dlopen")->required();
  sub->callback([&context, args] {
    context.run = [args]() -> Result<int> {
      return txn::load_check_helper(args->preload, args->files);
    };
  });
}

}  // namespace

void add_apply_command(CLI::App& app, CommandContext& context) {
  add_load_check_helper(app, context);
}

}  // namespace venvfix::cli
