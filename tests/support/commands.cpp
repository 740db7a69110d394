#include "support/commands.hpp"

#include "support/paths.hpp"

namespace venvfix::testing {

namespace {

// `argv` behind hermetic_prefix() (empty where the hermetic view is not available).
std::vector<std::string> in_hermetic_view(const std::vector<std::string>& argv) {
  std::vector<std::string> out = hermetic_prefix();
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

}  // namespace

CommandResult run_hermetic(const std::vector<std::string>& argv, int timeout_seconds) {
  return run_command(in_hermetic_view(argv), {{"LD_LIBRARY_PATH", ""}}, timeout_seconds);
}

CommandResult run_pip(const fs::path& venv, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& extra_env) {
  std::vector<std::string> argv = {(venv / "bin/python").string(), "-m", "pip"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::map<std::string, std::string> env = extra_env;
  env.insert({{"PIP_CONFIG_FILE", "/dev/null"},
              {"PIP_DISABLE_PIP_VERSION_CHECK", "1"},
              {"PIP_NO_INPUT", "1"}});
  return run_command(argv, env, 300);
}

CommandResult run_venvfix(const VenvfixCli& cli, const fs::path& where,
                          const std::vector<std::string>& args) {
  std::vector<std::string> argv = {
      venvfix_binary(),       cli.selector,  where.string(),
      "--index-url",          cli.index_url, "--cache-dir",
      cli.cache_dir.string(), "--ld-cache",  test_world().hermetic_cache.string()};
  argv.insert(argv.end(), cli.options.begin(), cli.options.end());
  argv.insert(argv.end(), args.begin(), args.end());
  if (cli.hermetic == Hermetic::yes) argv = in_hermetic_view(argv);
  argv.insert(argv.begin(), cli.launcher.begin(), cli.launcher.end());
  std::map<std::string, std::string> env = cli.env;
  env["LD_LIBRARY_PATH"] = "";
  return run_command(argv, env, cli.timeout_seconds);
}

}  // namespace venvfix::testing
