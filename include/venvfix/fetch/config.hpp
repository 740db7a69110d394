// How venvfix talks to the network: timeouts, retries, parallelism, TLS trust, credentials and
// where downloads are cached. index::IndexConfig extends this with the index URLs, so a
// fetch::Downloader can be built from either.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace venvfix::fetch {

namespace fs = std::filesystem;

// automatic: progress lines redrawn in place when stderr is a terminal, and a one-line summary
// at the end; off: nothing on stderr (-q, --json).
enum class ProgressMode { automatic, off };

struct FetchConfig {
  bool offline = false;                   // never touch the network: cache and file:// only
  double timeout_seconds = 30;            // connect timeout, and the low-speed window (< 1 byte/s)
  double total_timeout_seconds = 0;       // per transfer attempt; 0 = no limit
  fs::path cache_dir;                     // required for downloads
  std::optional<fs::path> ca_cert;        // a CA bundle that replaces the system's (--cert)
  std::optional<fs::path> netrc_file;     // default: curl's ($HOME/.netrc)
  int parallel = 6;                       // transfers at once, and cache or file:// reads
  int max_retries = 4;                    // after the first attempt
  double retry_base_delay_seconds = 0.5;  // back-off: base·2^attempt, with jitter
  double max_retry_delay_seconds = 30;    // also caps Retry-After
  ProgressMode progress = ProgressMode::automatic;
  // http(s) URL prefixes that `offline` still reaches: the find-links locations the user named
  // (a wheelhouse on the fleet's own web server), as pip's `--no-index --find-links URL`. A
  // request is reachable when its URL, without user-info, starts with one of them.
  std::vector<std::string> reachable_offline;
};

// Whether `offline` forbids fetching `url` (an http(s) URL): offline, and no
// `reachable_offline` prefix covers it.
bool blocked_offline(const FetchConfig& config, std::string_view url);

}  // namespace venvfix::fetch
