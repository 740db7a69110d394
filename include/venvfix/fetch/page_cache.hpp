// The HTTP cache of index pages (PEP 503/691 project pages, find-links pages, PEP 658
// metadata), with the rules of RFC 9111 for a private cache, as pip and uv apply them:
//
//   <cache>/pages/<sha256 of "URL\nAccept">   one entry: a JSON line (URL without user-info,
//                                             status, validators, freshness), then the body
//
// Cache-Control `no-store` responses are never stored (an entry stored before is removed);
// `max-age` (else `Expires` − `Date`) makes an entry fresh for that long, minus `Age`; `no-cache`
// or no freshness information at all makes it stale at once (revalidated at every use, as pip
// does for every index page); `must-revalidate` forbids serving it stale online, which venvfix
// never does anyway. A stale entry is revalidated with If-None-Match (ETag) and
// If-Modified-Since (Last-Modified); a 304 refreshes it without a body. Offline, an entry is
// used whatever its freshness (uv's --offline). Only 200, 404 and 410 answers are stored.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "venvfix/base/result.hpp"

namespace venvfix::fetch {

namespace fs = std::filesystem;

struct CacheDirectives {
  bool no_store = false;
  bool no_cache = false;
  bool must_revalidate = false;
  std::optional<std::int64_t> max_age;  // seconds
};

// Response Cache-Control (directive names case-insensitive, unknown ones ignored; `private`
// and `s-maxage` do not concern a private cache).
CacheDirectives parse_cache_control(std::string_view value);

// The response headers that decide caching.
struct CacheHeaders {
  std::string cache_control;
  std::string expires;
  std::string date;
  std::string age;
  std::string etag;
  std::string last_modified;
};

// An HTTP-date (IMF-fixdate, RFC 850 or asctime) as Unix seconds; nullopt when unparsable.
std::optional<std::int64_t> parse_http_date(std::string_view text);

// How many seconds after `received` (Unix seconds) a response with these headers stays fresh:
// RFC 9111 §4.2.1 (max-age, else Expires − Date; an unparsable Expires is already expired)
// minus the Age it arrived with; 0 with no-cache or without any freshness information (no
// heuristic freshness: see README, "Decisions where the contract is silent").
std::int64_t freshness_lifetime(const CacheHeaders& headers, std::int64_t received);

struct CachedPage {
  std::string url;  // as requested, without user-info
  std::string accept;
  long status = 0;
  std::string effective_url;  // after redirects, without user-info
  std::string content_type;
  CacheHeaders headers;
  std::int64_t stored_at = 0;    // Unix seconds of the response (or its last 304)
  std::int64_t fresh_until = 0;  // Unix seconds; fresh while now < fresh_until
  std::string body;

  bool fresh(std::int64_t now) const { return now < fresh_until; }
  bool revalidatable() const { return !headers.etag.empty() || !headers.last_modified.empty(); }
};

class PageCache {
 public:
  explicit PageCache(fs::path cache_root) : m_root(std::move(cache_root)) {}

  // The entry for (url, accept); nullopt when absent or unreadable (a damaged entry is a miss).
  std::optional<CachedPage> find(std::string_view url, std::string_view accept) const;
  // Writes `page` atomically (url and effective_url are stored without user-info).
  Status store(const CachedPage& page) const;
  void remove(std::string_view url, std::string_view accept) const;

  fs::path entry_path(std::string_view url, std::string_view accept) const;
  const fs::path& root() const { return m_root; }

 private:
  fs::path m_root;
};

}  // namespace venvfix::fetch
