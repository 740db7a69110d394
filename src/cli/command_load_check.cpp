// venvfix __load-check [--preload P]… [--bases B,…] -- FILE…: the hidden helper the transaction's
// load check runs in a child process (include/venvfix/apply/load_check.hpp); not in --help.
#include <memory>

#include "cli/command.hpp"
#include "venvfix/apply/load_check.hpp"

namespace venvfix::cli {

namespace {

struct LoadCheckArgs {
  std::vector<std::string> preload;
  std::vector<std::string> files;
  std::string bases;
};

}  // namespace

void add_load_check_command(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<LoadCheckArgs>();
  CLI::App* sub = app.add_subcommand("__load-check", "dlopen each FILE in a process of its own");
  sub->group("");  // internal: not in --help
  sub->add_option("--preload", args->preload, "Load first with RTLD_GLOBAL (failures ignored)");
  sub->add_option("--bases", args->bases,
                  "In whose process each file loads: an index, or - for its own");
  sub->add_option("files", args->files, "Libraries to dlopen")->required();
  sub->callback([&context, args] {
    context.run = [args]() -> Result<int> {
      return apply::load_check_helper(args->preload, args->files, args->bases);
    };
  });
}

}  // namespace venvfix::cli
