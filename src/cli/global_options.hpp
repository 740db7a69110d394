// Options every command shares. Where one is not given on the command line, the environment
// variables pip and uv users already set decide (index::IndexConfig::from_environment).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/log.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/index/config.hpp"

namespace venvfix::cli {

struct GlobalOptions {
  std::optional<fs::path> venv;
  std::optional<fs::path> python;  // --python: the interpreter whose environment to use
  std::optional<std::string> index_url;
  std::vector<std::string> extra_index_urls;
  std::vector<std::string> find_links;
  bool offline = false;
  std::optional<double> timeout_seconds;
  std::optional<fs::path> cache_dir;
  std::optional<fs::path> cert;
  bool json = false;
  int verbose = 0;
  bool quiet = false;
  // The loader's view of the system (see docs/resolver.md): a cache file, "none" for no
  // cache at all, or empty for /etc/ld.so.cache; LD_LIBRARY_PATH only when asked.
  std::string ld_cache;
  bool use_ld_library_path = false;
  std::optional<fs::path> manifest_dir;

  Verbosity verbosity() const;
  // The index and download configuration: the environment, then the command line on top.
  index::IndexConfig index_config() const;
};

// A check for options that take seconds: a number greater than 0, said in one short sentence
// (CLI::PositiveNumber's message prints the whole range of double).
CLI::Validator positive_number();
// A number of at least 0 (a CLI11 check).
CLI::Validator non_negative_number();

// The environment --venv or --python names (else $VIRTUAL_ENV, else ./.venv); --cache-dir
// decides where a read-only prefix keeps its state.
Result<env::Venv> open_environment(const GlobalOptions& options);

// Adds the global options to the top-level app.
void add_global_options(CLI::App& app, GlobalOptions& options);

}  // namespace venvfix::cli
