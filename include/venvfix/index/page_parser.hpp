// Parsers for project pages of the simple repository API and for find-links pages.
//
// Both parsers treat the page as hostile: they never read out of bounds, and a page they cannot
// trust (broken JSON, a tag or quoted attribute left open, a sha256 that is not 64 hex digits,
// a file name with a '/') is an Error with ExitCode::network naming the page's (redacted) URL,
// never a partial list.
#pragma once

#include <string>
#include <string_view>

#include "venvfix/base/result.hpp"
#include "venvfix/index/project_page.hpp"

namespace venvfix::index {

// The media types of PEP 691, in the Accept header order venvfix sends: JSON preferred, HTML
// accepted (PEP 503 servers answer text/html).
inline constexpr std::string_view k_simple_json = "application/vnd.pypi.simple.v1+json";
inline constexpr std::string_view k_simple_html = "application/vnd.pypi.simple.v1+html";
inline constexpr std::string_view k_accept_simple =
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01";

// PEP 503 HTML (also find-links pages): every <a href> becomes a file; relative hrefs resolve
// against `page_url` or a <base href>. `project` is stored as given.
Result<ProjectPage> parse_html_page(std::string_view html, std::string_view page_url,
                                    std::string_view project);

// PEP 691 JSON, api-version 1.x.
Result<ProjectPage> parse_json_page(std::string_view json, std::string_view page_url,
                                    std::string_view project);

enum class PageFormat { html, json };
// Chooses the parser from the Content-Type (parameters ignored); an unknown or missing type is
// sniffed (a body starting with '{' is JSON).
PageFormat page_format(std::string_view content_type, std::string_view body);

Result<ProjectPage> parse_page(std::string_view body, std::string_view content_type,
                               std::string_view page_url, std::string_view project);

// HTML character references in attribute values: &amp; &lt; &gt; &quot; &apos; &#NN; &#xHH;.
std::string html_unescape(std::string_view text);
// The inverse for text and double-quoted attribute values: & < > " as references.
std::string html_escape(std::string_view text);

}  // namespace venvfix::index
