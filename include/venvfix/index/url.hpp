// URLs as the simple repository API uses them: RFC 3986 reference resolution (links on a page
// are relative to the page's URL after redirects), user-info handling (credentials are used for
// requests, never shown), fragments (`#sha256=…`) and `file://` URLs for local indexes.
//
// Only what venvfix needs: no IDNA, no normalisation beyond RFC 3986 dot-segment removal.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "venvfix/base/result.hpp"

namespace venvfix::index {

namespace fs = std::filesystem;

// The five components of RFC 3986 §3. An absent component (no "?" at all) is distinct from an
// empty one ("?" followed by nothing), as §5.3 requires for recomposition.
struct UrlParts {
  std::string scheme;  // lowercased
  std::optional<std::string> authority;
  std::string path;
  std::optional<std::string> query;
  std::optional<std::string> fragment;

  std::string to_string() const;
};

// Splits a URL or relative reference (RFC 3986 appendix B); never fails.
UrlParts split_url(std::string_view url);

// Resolves `reference` against the absolute URL `base` (RFC 3986 §5.2, strict).
std::string resolve_url(std::string_view base, std::string_view reference);

// The URL without its fragment.
std::string without_fragment(std::string_view url);
// The fragment (text after '#'), or nullopt.
std::optional<std::string> url_fragment(std::string_view url);

// "user:password" of the authority, or nullopt when the URL carries none.
std::optional<std::string> url_user_info(std::string_view url);
// The URL with user-info removed entirely ("https://host/…"): for plan documents and cache keys.
std::string without_user_info(std::string_view url);
// The URL with `user_info` placed in its authority (replacing any there).
std::string with_user_info(std::string_view url, std::string_view user_info);
// Lowercased "host:port" of the authority without user-info ("" when there is no authority).
std::string url_host_port(std::string_view url);

// Decodes %XX escapes; malformed escapes are kept as they are.
std::string percent_decode(std::string_view text);
// Escapes what may not appear in a URL path segment (keeps unreserved characters and "/").
std::string percent_encode_path(std::string_view path);

// The last path segment, percent-decoded: the file name a link points at.
std::string url_file_name(std::string_view url);

bool is_file_url(std::string_view url);
bool is_http_url(std::string_view url);  // http:// or https://
// "file:///a/b%20c" → "/a/b c". Only local file URLs (empty or "localhost" host) are accepted.
Result<fs::path> file_url_to_path(std::string_view url);
// An absolute path as a file:// URL; a directory gets a trailing "/" so relative links resolve
// inside it.
enum class UrlTarget { file, directory };
std::string path_to_file_url(const fs::path& path, UrlTarget target);

// For every message: the URL with credentials replaced by "***" (base/log.hpp's redact_url).
std::string display_url(std::string_view url);

}  // namespace venvfix::index
