#include "curl_support.hpp"

#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "venvfix/base/strings.hpp"

namespace venvfix::fetch::detail {

Status CurlSession::open() {
  if (m_multi) return ok();
  VENVFIX_TRY(load_libcurl());
  ShareHandle share(libcurl().share_init());
  libcurl().share_setopt(share.get(), CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  libcurl().share_setopt(share.get(), CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  libcurl().share_setopt(share.get(), CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
  MultiHandle multi(libcurl().multi_init());
  libcurl().multi_setopt(multi.get(), CURLMOPT_MAX_HOST_CONNECTIONS, m_max_connections);
  libcurl().multi_setopt(multi.get(), CURLMOPT_MAX_TOTAL_CONNECTIONS, m_max_connections);
  libcurl().multi_setopt(multi.get(), CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
  m_share = std::move(share);
  m_multi = std::move(multi);
  return ok();
}

bool has_scheme(std::string_view url, std::string_view scheme) {
  return url.size() > scheme.size() + 3 && to_lower_ascii(url.substr(0, scheme.size())) == scheme &&
         url.substr(scheme.size(), 3) == "://";
}

void set_common_options(CURL* easy, const FetchConfig& config, CURLSH* share,
                        std::string_view url) {
  libcurl().easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  libcurl().easy_setopt(easy, CURLOPT_SHARE, share);
  libcurl().easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
  libcurl().easy_setopt(easy, CURLOPT_MAXREDIRS, 10L);
  // A redirect may never lead to a local file (or to anything but HTTP).
  libcurl().easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  libcurl().easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  auto timeout_ms = static_cast<long>(std::ceil(std::max(config.timeout_seconds, 0.001) * 1000));
  libcurl().easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  // Below 1 byte/s for the whole window is a stall.
  libcurl().easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
  libcurl().easy_setopt(easy, CURLOPT_LOW_SPEED_TIME,
                        std::max(1L, static_cast<long>(std::ceil(config.timeout_seconds))));
  if (config.total_timeout_seconds > 0) {
    libcurl().easy_setopt(easy, CURLOPT_TIMEOUT_MS,
                          static_cast<long>(std::ceil(config.total_timeout_seconds * 1000)));
  }
  libcurl().easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L);
  libcurl().easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L);
  if (config.ca_cert) libcurl().easy_setopt(easy, CURLOPT_CAINFO, config.ca_cert->c_str());
  libcurl().easy_setopt(easy, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_OPTIONAL));
  if (config.netrc_file)
    libcurl().easy_setopt(easy, CURLOPT_NETRC_FILE, config.netrc_file->c_str());
  libcurl().easy_setopt(easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  // Waiting for a connection to learn whether it multiplexes pays only where HTTP/2 can be had,
  // over TLS: on plain http, curl would queue every download to the host behind the first one
  // on its single connection instead of opening one per transfer.
  libcurl().easy_setopt(easy, CURLOPT_PIPEWAIT, has_scheme(url, "https") ? 1L : 0L);
  libcurl().easy_setopt(easy, CURLOPT_USERAGENT, "venvfix/" VENVFIX_VERSION);
}

bool is_retryable(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_WEIRD_SERVER_REPLY:
      return true;
    default:
      return false;
  }
}

bool is_retryable_status(long status) {
  return status == 429 || (status >= 500 && status <= 599);
}

std::optional<double> parse_retry_after(std::string_view value,
                                        std::chrono::system_clock::time_point now) {
  std::string_view text = trim(value);
  if (text.empty()) return std::nullopt;
  bool digits = true;
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  if (digits) {
    if (text.size() > 9) return 1e9;
    return static_cast<double>(std::stol(std::string(text)));
  }
  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
  std::tm tm{};
  std::string copy(text);
  const char* end = strptime(copy.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  std::time_t when = timegm(&tm);
  double seconds = std::difftime(when, std::chrono::system_clock::to_time_t(now));
  return std::max(0.0, seconds);
}

std::string describe_curl_error(CURLcode code, const char* error_buffer) {
  std::string detail = error_buffer != nullptr && *error_buffer ? std::string(error_buffer)
                                                                : libcurl().easy_strerror(code);
  switch (code) {
    case CURLE_PEER_FAILED_VERIFICATION:
      return fmt::format(
          "the server's TLS certificate is not trusted ({}); give its CA with "
          "--cert or SSL_CERT_FILE",
          detail);
    case CURLE_OPERATION_TIMEDOUT:
      return fmt::format("the connection timed out or stalled ({})", detail);
    case CURLE_PARTIAL_FILE:
      return fmt::format("the server sent fewer bytes than it announced ({})", detail);
    default:
      return detail;
  }
}

std::string describe_status(long status) {
  const char* reason = "";
  switch (status) {
    case 400:
      reason = " (Bad Request)";
      break;
    case 401:
      reason = " (Unauthorized: give credentials in the URL or in ~/.netrc or $NETRC)";
      break;
    case 403:
      reason = " (Forbidden: check the credentials for this index)";
      break;
    case 404:
      reason = " (Not Found)";
      break;
    case 407:
      reason = " (Proxy Authentication Required)";
      break;
    case 410:
      reason = " (Gone)";
      break;
    case 416:
      reason = " (Range Not Satisfiable)";
      break;
    case 429:
      reason = " (Too Many Requests)";
      break;
    case 500:
      reason = " (Internal Server Error)";
      break;
    case 502:
      reason = " (Bad Gateway)";
      break;
    case 503:
      reason = " (Service Unavailable)";
      break;
    case 504:
      reason = " (Gateway Timeout)";
      break;
    default:
      break;
  }
  return fmt::format("HTTP {}{}", status, reason);
}

}  // namespace venvfix::fetch::detail
