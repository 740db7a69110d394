#include "venvfix/fetch/page_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <ctime>

#include <nlohmann/json.hpp>

#include "curl_library.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/json_text.hpp"
#include "venvfix/base/log.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/fetch/cache_layout.hpp"

namespace venvfix::fetch {

namespace {

std::optional<std::int64_t> parse_seconds(std::string_view text) {
  text = trim(text);
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
    text = text.substr(1, text.size() - 2);  // max-age="60" is tolerated, as caches do
  }
  std::int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || end != text.data() + text.size()) return std::nullopt;
  if (error == std::errc::result_out_of_range) return std::int64_t{1} << 31;  // "forever"
  if (error != std::errc() || value < 0) return std::nullopt;
  return value;
}

// The URL without its user-info: what the cache stores (redact_url's "***@" would be taken
// for credentials when the entry's effective URL resolves links).
std::string without_user_info(std::string_view url) {
  std::size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  std::size_t host = scheme + 3;
  std::size_t end = url.find_first_of("/?#", host);
  std::size_t at = url.substr(0, end).rfind('@');
  if (at == std::string_view::npos || at < host) return std::string(url);
  return std::string(url.substr(0, host)) + std::string(url.substr(at + 1));
}

std::string key_of(std::string_view url, std::string_view accept) {
  return to_hex(sha256(redact_url(url) + "\n" + std::string(accept)));
}

}  // namespace

CacheDirectives parse_cache_control(std::string_view value) {
  CacheDirectives out;
  for (std::string_view item : split(value, ',')) {
    std::size_t equals = item.find('=');
    std::string name = to_lower_ascii(trim(item.substr(0, equals)));
    std::string_view argument = equals == std::string_view::npos ? "" : item.substr(equals + 1);
    if (name == "no-store") {
      out.no_store = true;
    } else if (name == "no-cache") {
      out.no_cache = true;  // also `no-cache="field"`: revalidating is the safe reading
    } else if (name == "must-revalidate" || name == "proxy-revalidate") {
      out.must_revalidate = true;
    } else if (name == "max-age") {
      // A malformed max-age makes the response stale (RFC 9111 §4.2.1).
      out.max_age = parse_seconds(argument).value_or(0);
    }
  }
  return out;
}

std::optional<std::int64_t> parse_http_date(std::string_view text) {
  std::string copy(trim(text));
  if (copy.empty()) return std::nullopt;
  // curl_getdate reads all three formats of RFC 9110. Without libcurl no date parses: a cached
  // page then counts as stale, which is the safe reading.
  Result<const detail::CurlLibrary*> library = detail::load_libcurl();
  if (!library) return std::nullopt;
  time_t when = (*library)->getdate(copy.c_str(), nullptr);
  if (when == static_cast<time_t>(-1)) return std::nullopt;
  return static_cast<std::int64_t>(when);
}

std::int64_t freshness_lifetime(const CacheHeaders& headers, std::int64_t received) {
  CacheDirectives directives = parse_cache_control(headers.cache_control);
  if (directives.no_cache || directives.no_store) return 0;
  std::int64_t lifetime = 0;
  if (directives.max_age) {
    lifetime = *directives.max_age;
  } else if (!headers.expires.empty()) {
    std::optional<std::int64_t> expires = parse_http_date(headers.expires);
    std::int64_t date = parse_http_date(headers.date).value_or(received);
    lifetime = expires ? *expires - date : 0;  // "Expires: 0" means already expired
  }
  std::int64_t age = parse_seconds(headers.age).value_or(0);
  return std::max<std::int64_t>(0, lifetime - age);
}

fs::path PageCache::entry_path(std::string_view url, std::string_view accept) const {
  return m_root / cache_layout::pages / key_of(url, accept);
}

std::optional<CachedPage> PageCache::find(std::string_view url, std::string_view accept) const {
  if (m_root.empty()) return std::nullopt;
  Result<std::string> text = read_file(entry_path(url, accept), 1u << 30);
  if (!text) return std::nullopt;
  std::size_t newline = text->find('\n');
  if (newline == std::string::npos) return std::nullopt;
  nlohmann::json head = nlohmann::json::parse(std::string_view(*text).substr(0, newline), nullptr,
                                              /*allow_exceptions=*/false);
  if (!head.is_object() || head.value("url", std::string()) != without_user_info(url) ||
      head.value("accept", std::string()) != accept) {
    return std::nullopt;  // another format, or a (never expected) key collision
  }
  CachedPage page;
  page.url = head.value("url", std::string());
  page.accept = head.value("accept", std::string());
  page.status = head.value("status", 0L);
  page.effective_url = head.value("effective_url", page.url);
  page.content_type = head.value("content_type", std::string());
  page.headers.cache_control = head.value("cache_control", std::string());
  page.headers.expires = head.value("expires", std::string());
  page.headers.date = head.value("date", std::string());
  page.headers.age = head.value("age", std::string());
  page.headers.etag = head.value("etag", std::string());
  page.headers.last_modified = head.value("last_modified", std::string());
  page.stored_at = head.value("stored_at", std::int64_t{0});
  page.fresh_until = head.value("fresh_until", std::int64_t{0});
  std::uint64_t size = head.value("size", std::uint64_t{0});
  if (text->size() - newline - 1 != size) return std::nullopt;  // truncated by hand
  page.body = text->substr(newline + 1);
  return page;
}

Status PageCache::store(const CachedPage& page) const {
  if (m_root.empty()) return ok();
  fs::path path = entry_path(page.url, page.accept);
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  if (error) {
    return make_error(ExitCode::error, "cannot create the page cache {}: {}",
                      path.parent_path().string(), error.message());
  }
  nlohmann::ordered_json head = {{"url", without_user_info(page.url)},
                                 {"accept", page.accept},
                                 {"status", page.status},
                                 {"effective_url", without_user_info(page.effective_url)},
                                 {"content_type", page.content_type},
                                 {"cache_control", page.headers.cache_control},
                                 {"expires", page.headers.expires},
                                 {"date", page.headers.date},
                                 {"age", page.headers.age},
                                 {"etag", page.headers.etag},
                                 {"last_modified", page.headers.last_modified},
                                 {"stored_at", page.stored_at},
                                 {"fresh_until", page.fresh_until},
                                 {"size", page.body.size()}};
  return write_file_atomic(path, json_text(head) + "\n" + page.body);
}

void PageCache::remove(std::string_view url, std::string_view accept) const {
  if (m_root.empty()) return;
  ::unlink(entry_path(url, accept).c_str());
}

}  // namespace venvfix::fetch
