// What every command that reads a venv needs first: the venv, the manifests and the loader's
// view of the system, built from the global options.
#pragma once

#include "cli/global_options.hpp"
#include "venvfix/elf/resolver.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/manifest/manifests.hpp"

namespace venvfix::cli {

struct Session {
  env::Venv venv;
  manifest::Manifests manifests;
  elf::SystemView system;
};

Result<Session> open_session(const GlobalOptions& options);

}  // namespace venvfix::cli
