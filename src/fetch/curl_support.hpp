// libcurl plumbing shared by the downloader's transfers: RAII owners for curl's handles, the
// options every request gets, and how curl's outcomes map to "retry" or "give up". Private to
// src/fetch: <curl/curl.h> appears nowhere else.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "curl_library.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/fetch/config.hpp"

namespace venvfix::fetch::detail {

// The deleters call libcurl(): a handle exists only once load_libcurl() succeeded.
struct EasyDeleter {
  void operator()(CURL* easy) const { libcurl().easy_cleanup(easy); }
};
struct MultiDeleter {
  void operator()(CURLM* multi) const { libcurl().multi_cleanup(multi); }
};
struct ShareDeleter {
  void operator()(CURLSH* share) const { libcurl().share_cleanup(share); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { libcurl().slist_free_all(list); }
};
using EasyHandle = std::unique_ptr<CURL, EasyDeleter>;
using MultiHandle = std::unique_ptr<CURLM, MultiDeleter>;
using ShareHandle = std::unique_ptr<CURLSH, ShareDeleter>;
using HeaderList = std::unique_ptr<curl_slist, SlistDeleter>;

// A downloader's multi handle and its share handle (DNS, TLS sessions and connections, so that
// page fetches and downloads reuse each other's connections). Both are made, and libcurl
// loaded, when the first transfer opens the session: a downloader that only answers from its
// cache or from file:// URLs never loads libcurl.
class CurlSession {
 public:
  explicit CurlSession(long max_connections) : m_max_connections(max_connections) {}

  // Loads libcurl and makes the handles on the first call; the error names libcurl.
  Status open();
  // After open() succeeded.
  CURLM* multi() const { return m_multi.get(); }
  CURLSH* share() const { return m_share.get(); }

 private:
  long m_max_connections;
  ShareHandle m_share;  // declared first: the multi handle goes before the share it used
  MultiHandle m_multi;
};

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
