// libFuzzer target: what an index server sends, the most hostile text venvfix reads: PEP 503 HTML
// and PEP 691 JSON project pages, and the response headers that decide caching and retries.
// For every page that parses: each file has a name a file can have, a URL without a fragment, and
// hashes of 64 lowercase hex digits; an HTML file's name is its URL's last segment. The page
// written back as an index would serve it, in HTML and (when its text is UTF-8) in JSON, parses
// to the same files: the two parsers agree with each other and with themselves. The header
// parsers: max-age and Retry-After are never negative, and an HTTP-date written back as
// IMF-fixdate reads as the same instant.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fetch/curl_support.hpp"
#include "fuzz_check.hpp"
#include "venvfix/base/utf8.hpp"
#include "venvfix/fetch/page_cache.hpp"
#include "venvfix/index/page_parser.hpp"
#include "venvfix/index/url.hpp"

namespace {

using venvfix::index::html_escape;
using venvfix::index::IndexFile;
using venvfix::index::ProjectPage;

constexpr std::string_view k_page_url = "https://index.example/simple/demo/";

bool is_sha256_hex(const std::string& text) {
  return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

void check_file(const IndexFile& file) {
  VENVFIX_FUZZ_CHECK(!file.filename.empty() && file.filename != "." && file.filename != "..");
  VENVFIX_FUZZ_CHECK(file.filename.find_first_of(std::string_view("/\0", 2)) == std::string::npos);
  VENVFIX_FUZZ_CHECK(file.url.find('#') == std::string::npos);
  VENVFIX_FUZZ_CHECK(!file.sha256_hex || is_sha256_hex(*file.sha256_hex));
  VENVFIX_FUZZ_CHECK(!file.core_metadata_sha256 || is_sha256_hex(*file.core_metadata_sha256));
  VENVFIX_FUZZ_CHECK(!file.core_metadata_sha256 || file.has_core_metadata);
  VENVFIX_FUZZ_CHECK(file.yanked == file.yanked_reason.has_value());
  VENVFIX_FUZZ_CHECK(!file.requires_python || !file.requires_python->empty());
}

// The page as a PEP 503 server writes it.
std::string as_html(const ProjectPage& page) {
  std::string out = "<!DOCTYPE html>\n<html><body>\n";
  for (const IndexFile& file : page.files) {
    std::string href = file.url;
    if (file.sha256_hex) href += "#sha256=" + *file.sha256_hex;
    out += "<a href=\"" + html_escape(href) + "\"";
    if (file.requires_python) {
      out += " data-requires-python=\"" + html_escape(*file.requires_python) + "\"";
    }
    if (file.yanked) out += " data-yanked=\"" + html_escape(*file.yanked_reason) + "\"";
    if (file.core_metadata_sha256) {
      out += " data-core-metadata=\"sha256=" + *file.core_metadata_sha256 + "\"";
    } else if (file.has_core_metadata) {
      out += " data-core-metadata=\"true\"";
    }
    out += ">" + html_escape(file.filename) + "</a><br/>\n";
  }
  return out + "</body></html>\n";
}

bool all_utf8(const ProjectPage& page) {
  for (const IndexFile& file : page.files) {
    for (const std::string* text : {&file.filename, &file.url}) {
      if (!venvfix::is_valid_utf8(*text)) return false;
    }
    if (file.requires_python && !venvfix::is_valid_utf8(*file.requires_python)) return false;
    if (file.yanked_reason && !venvfix::is_valid_utf8(*file.yanked_reason)) return false;
  }
  return true;
}

// The page as a PEP 691 (API 1.1) server writes it.
std::string as_json(const ProjectPage& page) {
  nlohmann::json files = nlohmann::json::array();
  for (const IndexFile& file : page.files) {
    nlohmann::json entry = {{"filename", file.filename}, {"url", file.url}};
    entry["hashes"] = nlohmann::json::object();
    if (file.sha256_hex) entry["hashes"]["sha256"] = *file.sha256_hex;
    if (file.requires_python) entry["requires-python"] = *file.requires_python;
    entry["yanked"] = file.yanked ? nlohmann::json(*file.yanked_reason) : nlohmann::json(false);
    if (file.core_metadata_sha256) {
      entry["core-metadata"] = {{"sha256", *file.core_metadata_sha256}};
    } else {
      entry["core-metadata"] = file.has_core_metadata;
    }
    if (file.size) entry["size"] = *file.size;
    files.push_back(std::move(entry));
  }
  return nlohmann::json{
      {"meta", {{"api-version", "1.1"}}}, {"name", page.project}, {"files", files}}
      .dump();
}

void check_written_back(const ProjectPage& page, bool from_html) {
  for (const IndexFile& file : page.files) {
    check_file(file);
    if (from_html) VENVFIX_FUZZ_CHECK(file.filename == venvfix::index::url_file_name(file.url));
  }
  if (from_html) {
    auto again = venvfix::index::parse_html_page(as_html(page), k_page_url, "demo");
    VENVFIX_FUZZ_CHECK(again && again->files == page.files);
  }
  if (all_utf8(page)) {
    auto again = venvfix::index::parse_json_page(as_json(page), k_page_url, "demo");
    VENVFIX_FUZZ_CHECK(again);
    // HTML has no size attribute (PEP 700 is JSON only), so it is absent on both sides.
    VENVFIX_FUZZ_CHECK(again->files == page.files);
  }
}

void check_headers(std::string_view line) {
  const venvfix::fetch::CacheDirectives directives = venvfix::fetch::parse_cache_control(line);
  VENVFIX_FUZZ_CHECK(!directives.max_age || *directives.max_age >= 0);
  const auto now = std::chrono::system_clock::from_time_t(1'700'000'000);
  if (auto delay = venvfix::fetch::detail::parse_retry_after(line, now)) {
    VENVFIX_FUZZ_CHECK(std::isfinite(*delay) && *delay >= 0);
  }
  std::optional<std::int64_t> when = venvfix::fetch::parse_http_date(line);
  // Years 1970 to 9999: what IMF-fixdate can write with four digits.
  if (!when || *when < 0 || *when > 253'402'300'799) return;
  const auto seconds = static_cast<std::time_t>(*when);
  std::tm tm{};
  VENVFIX_FUZZ_CHECK(gmtime_r(&seconds, &tm) != nullptr);
  char text[64];
  VENVFIX_FUZZ_CHECK(std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm) > 0);
  VENVFIX_FUZZ_CHECK(venvfix::fetch::parse_http_date(text) == when);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = venvfix::fuzz::as_text(data, size);
  if (auto page = venvfix::index::parse_html_page(text, k_page_url, "demo")) {
    check_written_back(*page, true);
  } else {
    VENVFIX_FUZZ_CHECK(!page.error().message.empty());
  }
  if (auto page = venvfix::index::parse_json_page(text, k_page_url, "demo")) {
    check_written_back(*page, false);
  } else {
    VENVFIX_FUZZ_CHECK(!page.error().message.empty());
  }
  check_headers(venvfix::fuzz::split_once(text).first);
  return 0;
}
