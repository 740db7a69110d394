// Where packages come from, configured the way pip and uv users already do it: the global
// options of the contract, each with its environment variable.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "venvfix/fetch/config.hpp"

namespace venvfix::index {

namespace fs = std::filesystem;

inline constexpr const char* k_default_index_url = "https://pypi.org/simple";

// IndexConfig is a fetch::FetchConfig (offline, timeout_seconds, cache_dir, ca_cert, parallel,
// netrc_file, …) plus the indexes, so a fetch::Downloader can be built from it directly.
struct IndexConfig : fetch::FetchConfig {
  // --index-url first, then every --extra-index-url, in order: for each project the first of
  // these that has it is the only one used (as uv does; this blocks dependency confusion).
  std::vector<std::string> index_urls{k_default_index_url};
  // Local directories, file:// URLs or http(s) pages of links; merged into every project.
  std::vector<std::string> find_links;

  // Reads the environment; command-line options are applied on top by the caller.
  //   index:        VENVFIX_INDEX_URL, else PIP_INDEX_URL, else UV_INDEX_URL, else PyPI
  //   extras:       PIP_EXTRA_INDEX_URL, else UV_EXTRA_INDEX_URL (whitespace-separated)
  //   find-links:   PIP_FIND_LINKS, else UV_FIND_LINKS (whitespace-separated)
  //   offline:      VENVFIX_OFFLINE, UV_OFFLINE (1/true/yes/on)
  //   timeout:      VENVFIX_TIMEOUT, else PIP_TIMEOUT, else PIP_DEFAULT_TIMEOUT, else
  //                 UV_HTTP_TIMEOUT (seconds)
  //   cache:        VENVFIX_CACHE_DIR, else $XDG_CACHE_HOME/venvfix, else ~/.cache/venvfix
  //   CA bundle:    PIP_CERT, else SSL_CERT_FILE, else REQUESTS_CA_BUNDLE
  //   netrc:        NETRC (else libcurl's ~/.netrc)
  // Unparsable numbers are ignored (the default stays).
  using Environment = std::function<std::optional<std::string>(const char* name)>;
  static IndexConfig from_environment(const Environment& environment);
  static IndexConfig from_environment();  // the process environment
};

}  // namespace venvfix::index
