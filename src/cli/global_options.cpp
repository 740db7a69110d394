#include "cli/global_options.hpp"

#include <cstdlib>

namespace venvfix::cli {

Verbosity GlobalOptions::verbosity() const {
  if (quiet) return Verbosity::quiet;
  if (verbose >= 2) return Verbosity::debug;
  if (verbose == 1) return Verbosity::verbose;
  return Verbosity::normal;
}

index::IndexConfig GlobalOptions::index_config() const {
  index::IndexConfig config = index::IndexConfig::from_environment();
  if (index_url) config.index_urls = {*index_url};
  if (!extra_index_urls.empty()) {
    config.index_urls.resize(1);
    config.index_urls.insert(config.index_urls.end(), extra_index_urls.begin(),
                             extra_index_urls.end());
  }
  if (!find_links.empty()) config.find_links = find_links;
  if (offline) config.offline = true;
  if (timeout_seconds) config.timeout_seconds = *timeout_seconds;
  if (cache_dir) config.cache_dir = *cache_dir;
  if (cert) config.ca_cert = *cert;
  if (json || quiet) config.progress = fetch::ProgressMode::off;
  return config;
}

Result<env::Venv> open_environment(const GlobalOptions& options) {
  env::OpenOptions open;
  if (options.cache_dir) {
    open.cache_dir = *options.cache_dir;
  } else if (auto config = index::IndexConfig::from_environment(); !config.cache_dir.empty()) {
    open.cache_dir = config.cache_dir;
  }
  if (options.python) return env::open_python(*options.python, open);
  return env::open_venv(options.venv, open);
}

namespace {

CLI::Validator number_from(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& text) -> std::string {
        char* end = nullptr;
        double value = std::strtod(text.c_str(), &end);
        const bool in_range = zero_allowed ? value >= 0 : value > 0;
        if (text.empty() || end == nullptr || *end != '\0' || !in_range) {
          return std::string("must be a number ") +
                 (zero_allowed ? "of at least 0" : "greater than 0") + ", not '" + text + "'";
        }
        return {};
      },
      zero_allowed ? "NUMBER" : "POSITIVE");
}

}  // namespace

CLI::Validator positive_number() {
  return number_from(false);
}

CLI::Validator non_negative_number() {
  return number_from(true);
}

void add_global_options(CLI::App& app, GlobalOptions& options) {
  auto* venv = app.add_option(
      "--venv", options.venv,
      "The environment: a venv or a Python prefix (default: $VIRTUAL_ENV, else ./.venv)");
  app.add_option("--python", options.python,
                 "The interpreter whose environment to use (read, not run)")
      ->excludes(venv);
  app.add_option("--index-url", options.index_url,
                 "PEP 503/691 simple index (default: $VENVFIX_INDEX_URL, $PIP_INDEX_URL, "
                 "$UV_INDEX_URL, else https://pypi.org/simple)");
  app.add_option("--extra-index-url", options.extra_index_urls,
                 "More indexes, repeatable (default: $PIP_EXTRA_INDEX_URL); for each project "
                 "the first index that has it is the only one used");
  app.add_option("--find-links", options.find_links,
                 "Flat directories or pages of wheels, repeatable");
  app.add_flag("--offline", options.offline, "Never touch the network; cache and find-links only");
  app.add_option("--timeout", options.timeout_seconds,
                 "Give up on a stalled connection after S seconds (default 30)")
      ->check(positive_number());
  app.add_option("--cache-dir", options.cache_dir,
                 "Download cache (default: $XDG_CACHE_HOME/venvfix or ~/.cache/venvfix)");
  app.add_option("--cert", options.cert,
                 "CA bundle for TLS (default: $PIP_CERT, $SSL_CERT_FILE); always verified");
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

}  // namespace venvfix::cli
