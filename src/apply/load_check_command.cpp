// run_with_timeout: the load check's and --verify-cmd's child process, on base's run_process.
#include "venvfix/apply/load_check.hpp"

namespace venvfix::apply {

Result<CommandOutcome> run_with_timeout(const std::vector<std::string>& argv,
                                        const std::optional<std::vector<std::string>>& environment,
                                        int timeout_seconds, std::size_t max_output) {
  ProcessOptions options;
  options.environment = environment;
  options.timeout_ms = timeout_seconds * 1000;
  options.max_output = max_output;
  options.merge_stderr = MergeStderr::yes;
  VENVFIX_TRY_ASSIGN(ProcessOutcome outcome, run_process(argv, options));
  return CommandOutcome{outcome.exit_code, outcome.timed_out, std::move(outcome.out)};
}

}  // namespace venvfix::apply
