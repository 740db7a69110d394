// Downloader::get_page: page fetches through the HTTP page cache (venvfix/fetch/page_cache.hpp).
#include <chrono>

#include <spdlog/spdlog.h>

#include "venvfix/base/log.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/fetch/cache_layout.hpp"
#include "venvfix/fetch/downloader.hpp"

namespace venvfix::fetch {

namespace {

bool is_http(std::string_view url) {
  std::string lower = to_lower_ascii(url.substr(0, 8));
  return lower.starts_with("http://") || lower.starts_with("https://");
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TextResponse from_entry(const CachedPage& page, TextResponse::Source source) {
  TextResponse response;
  response.status = page.status;
  response.body = page.body;
  response.effective_url = page.effective_url;
  response.content_type = page.content_type;
  response.cache_headers = page.headers;
  response.source = source;
  return response;
}

bool storable_status(long status) {
  return status == 200 || status == 404 || status == 410;
}

// A 304 replaces the stored header fields it carries (RFC 9111 §4.3.4).
void refresh(CachedPage& page, const CacheHeaders& fresh, std::int64_t now) {
  auto take = [](std::string& stored, const std::string& sent) {
    if (!sent.empty()) stored = sent;
  };
  take(page.headers.cache_control, fresh.cache_control);
  take(page.headers.expires, fresh.expires);
  take(page.headers.etag, fresh.etag);
  take(page.headers.last_modified, fresh.last_modified);
  page.headers.date = fresh.date;
  page.headers.age = fresh.age;
  page.stored_at = now;
  page.fresh_until = now + freshness_lifetime(page.headers, now);
}

void store_quietly(const PageCache& cache, const CachedPage& page) {
  if (Status stored = cache.store(page); !stored) {
    spdlog::warn("not caching {}: {}", redact_url(page.url), stored.error().message);
  }
}

}  // namespace

Result<TextResponse> Downloader::get_page(const std::string& url,
                                          const std::vector<std::string>& accept_headers,
                                          std::uint64_t max_bytes) {
  const FetchConfig& settings = config();
  if (!is_http(url) || settings.cache_dir.empty()) return get(url, accept_headers, max_bytes);
  PageCache cache(settings.cache_dir);
  const std::string accept = join(accept_headers, ", ");
  std::optional<CachedPage> entry = cache.find(url, accept);
  const std::int64_t now = unix_now();
  if (blocked_offline(settings, url)) {
    if (entry) {
      spdlog::debug("offline: {} from the page cache (stored {} s ago)", redact_url(url),
                    now - entry->stored_at);
      return from_entry(*entry, TextResponse::Source::cache);
    }
    return make_error(ExitCode::network, "offline, and {} is not in the page cache {}",
                      redact_url(url), (settings.cache_dir / cache_layout::pages).string());
  }
  if (entry && entry->fresh(now)) {
    spdlog::debug("{}: fresh in the page cache for {} s more", redact_url(url),
                  entry->fresh_until - now);
    return from_entry(*entry, TextResponse::Source::cache);
  }
  std::vector<std::string> conditions;
  if (entry && entry->revalidatable()) {
    if (!entry->headers.etag.empty()) conditions.push_back("If-None-Match: " + entry->headers.etag);
    if (!entry->headers.last_modified.empty()) {
      conditions.push_back("If-Modified-Since: " + entry->headers.last_modified);
    }
  }
  VENVFIX_TRY_ASSIGN(TextResponse response, http_get(url, accept, conditions, max_bytes));
  const std::int64_t received = unix_now();
  if (response.status == 304 && entry && !conditions.empty()) {
    spdlog::debug("{}: not modified (HTTP 304), using the page cache", redact_url(url));
    refresh(*entry, response.cache_headers, received);
    if (parse_cache_control(entry->headers.cache_control).no_store) {
      cache.remove(url, accept);
    } else {
      store_quietly(cache, *entry);
    }
    return from_entry(*entry, TextResponse::Source::revalidated);
  }
  if (!storable_status(response.status)) return response;
  if (parse_cache_control(response.cache_headers.cache_control).no_store) {
    cache.remove(url, accept);  // an older entry must not outlive the server's wish
    return response;
  }
  CachedPage page;
  page.url = url;
  page.accept = accept;
  page.status = response.status;
  page.effective_url = response.effective_url;
  page.content_type = response.content_type;
  page.headers = response.cache_headers;
  page.stored_at = received;
  page.fresh_until = received + freshness_lifetime(page.headers, received);
  page.body = response.body;
  store_quietly(cache, page);
  return response;
}

}  // namespace venvfix::fetch
