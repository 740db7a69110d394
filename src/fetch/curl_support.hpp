// libcurl plumbing shared by the downloader's transfers: one-time global initialisation, RAII
// owners for curl's handles, the options every request gets, and how curl's outcomes map to
// "retry" or "give up". Private to src/fetch: <curl/curl.h> appears nowhere else.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "venvfix/fetch/config.hpp"

namespace venvfix::fetch::detail {

// curl_global_init exactly once per process (thread-safe).
void ensure_curl_initialised();

struct EasyDeleter {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};
struct MultiDeleter {
  void operator()(CURLM* multi) const { curl_multi_cleanup(multi); }
};
struct ShareDeleter {
  void operator()(CURLSH* share) const { curl_share_cleanup(share); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using EasyHandle = std::unique_ptr<CURL, EasyDeleter>;
using MultiHandle = std::unique_ptr<CURLM, MultiDeleter>;
using ShareHandle = std::unique_ptr<CURLSH, ShareDeleter>;
using HeaderList = std::unique_ptr<curl_slist, SlistDeleter>;

// A share handle for DNS, TLS sessions and connections, so page fetches and downloads reuse
// each other's connections.
ShareHandle make_share();

// Whether `url` starts with `scheme` and "://" (the scheme in any case).
bool has_scheme(std::string_view url, std::string_view scheme);

// Options every request for `url` gets: redirects (http/https only), timeouts, TLS verification
// and CA, netrc, HTTP/2 over TLS, no signals, a user agent.
void set_common_options(CURL* easy, const FetchConfig& config, CURLSH* share, std::string_view url);

// Whether a failed attempt is worth another try (connection trouble, timeouts, a broken
// transfer), as opposed to a certificate, protocol or local error.
bool is_retryable(CURLcode code);
// 429 and 5xx.
bool is_retryable_status(long status);

// Retry-After: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); nullopt when unparsable.
std::optional<double> parse_retry_after(std::string_view value,
                                        std::chrono::system_clock::time_point now);

// One sentence for a curl failure, without the URL (callers add the redacted URL).
std::string describe_curl_error(CURLcode code, const char* error_buffer);
// "HTTP 404 (Not Found)", with a hint for 401/403/407.
std::string describe_status(long status);

}  // namespace venvfix::fetch::detail
