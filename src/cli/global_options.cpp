#include "cli/global_options.hpp"

#include <cstdlib>

#include "venvfix/base/strings.hpp"

namespace venvfix::cli {

namespace {
std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}
}  // namespace

Verbosity GlobalOptions::verbosity() const {
  if (quiet) return Verbosity::quiet;
  if (verbose >= 2) return Verbosity::debug;
  if (verbose == 1) return Verbosity::verbose;
  return Verbosity::normal;
}

void add_global_options(CLI::App& app, GlobalOptions& options) {
  app.add_option("--venv", options.venv, "The environment (default: $VIRTUAL_ENV, else ./.venv)");
  app.add_option("--index-url", options.index_url,
                 "PEP 503/691 simple index (default: $VENVFIX_INDEX_URL, $PIP_INDEX_URL, "
                 "$UV_INDEX_URL, else https://pypi.org/simple)");
  app.add_option("--extra-index-url", options.extra_index_urls,
                 "More indexes, repeatable (default: $PIP_EXTRA_INDEX_URL)");
  app.add_option("--find-links", options.find_links,
                 "Flat directories or pages of wheels, repeatable");
  app.add_flag("--offline", options.offline, "Never touch the network; cache and find-links only");
  app.add_option("--timeout", options.timeout_seconds,
                 "Give up on a stalled connection after S seconds")
      ->check(CLI::PositiveNumber);
  app.add_option("--cache-dir", options.cache_dir,
                 "Download cache (default: $XDG_CACHE_HOME/venvfix or ~/.cache/venvfix)");
  app.add_flag("--json", options.json, "Print one JSON document on stdout; logs go to stderr");
  app.add_flag("-v,--verbose", options.verbose, "More logging (repeat for debug)");
  app.add_flag("-q,--quiet", options.quiet, "Less logging");
  app.add_option("--ld-cache", options.ld_cache,
                 "Loader cache to resolve with instead of /etc/ld.so.cache ('none': no cache)")
      ->envname("VENVFIX_LD_CACHE");
  app.add_flag("--use-ld-library-path", options.use_ld_library_path,
               "Let LD_LIBRARY_PATH take part in resolution, as it would in this shell");
  app.add_option("--manifests", options.manifest_dir, "Directory of venvfix's data manifests")
      ->envname("VENVFIX_MANIFEST_DIR");
}

void apply_environment_defaults(GlobalOptions& options) {
  if (options.index_url.empty()) {
    for (const char* name : {"VENVFIX_INDEX_URL", "PIP_INDEX_URL", "UV_INDEX_URL"}) {
      options.index_url = env_or_empty(name);
      if (!options.index_url.empty()) break;
    }
    if (options.index_url.empty()) options.index_url = "https://pypi.org/simple";
  }
  if (options.extra_index_urls.empty()) {
    // pip splits its list variables on whitespace.
    std::string extra = env_or_empty("PIP_EXTRA_INDEX_URL");
    for (std::string_view part : split(extra, ' ')) {
      part = trim(part);
      if (!part.empty()) options.extra_index_urls.emplace_back(part);
    }
  }
  options.index_urls.clear();
  options.index_urls.push_back(options.index_url);
  options.index_urls.insert(options.index_urls.end(), options.extra_index_urls.begin(),
                            options.extra_index_urls.end());
  if (!options.cache_dir) {
    std::string xdg = env_or_empty("XDG_CACHE_HOME");
    std::string home = env_or_empty("HOME");
    if (!xdg.empty()) {
      options.cache_dir = fs::path(xdg) / "venvfix";
    } else if (!home.empty()) {
      options.cache_dir = fs::path(home) / ".cache" / "venvfix";
    }
  }
}

}  // namespace venvfix::cli
