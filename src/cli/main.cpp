// venvfix's entry point: parse, call, print, map errors to exit codes. Nothing else.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "venvfix/base/log.hpp"
#include "venvfix/base/result.hpp"

int main(int argc, char** argv) {
  CLI::App app{"venvfix: repair Python virtual environments whose native libraries are broken"};
  app.set_version_flag("--version", std::string("venvfix ") + VENVFIX_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : static_cast<int>(venvfix::ExitCode::usage);
  }
  return 0;
}
