// Options every command shares, with the environment-variable defaults pip and uv users expect.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/log.hpp"
#include "venvfix/base/result.hpp"

namespace venvfix::cli {

struct GlobalOptions {
  std::optional<fs::path> venv;
  std::vector<std::string> index_urls;  // --index-url first, then --extra-index-url
  std::string index_url;
  std::vector<std::string> extra_index_urls;
  std::vector<std::string> find_links;
  bool offline = false;
  double timeout_seconds = 30;
  std::optional<fs::path> cache_dir;
  bool json = false;
  int verbose = 0;
  bool quiet = false;
  // The loader's view of the system (see docs/resolver.md): a cache file, "none" for no
  // cache at all, or empty for /etc/ld.so.cache; LD_LIBRARY_PATH only when asked.
  std::string ld_cache;
  bool use_ld_library_path = false;
  std::optional<fs::path> manifest_dir;

  Verbosity verbosity() const;
};

// Adds the global options to the top-level app.
void add_global_options(CLI::App& app, GlobalOptions& options);
// Fills what the command line left unset from the environment, after parsing.
void apply_environment_defaults(GlobalOptions& options);

}  // namespace venvfix::cli
