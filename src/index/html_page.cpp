// A small, strict-where-it-matters HTML scanner for PEP 503 pages. It understands tags,
// quoted and unquoted attributes, comments and character references; it does not build a tree
// (anchors are all a simple page has).
#include <cstdint>
#include <map>

#include "page_common.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/index/page_parser.hpp"
#include "venvfix/index/url.hpp"

namespace venvfix::index {

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == ':' || c == '.';
}

void append_utf8(std::string& out, std::uint32_t code_point) {
  if (code_point == 0 || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) {
    code_point = 0xFFFD;
  }
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

struct Tag {
  std::string name;  // lowercased
  bool closing = false;
  std::map<std::string, std::string> attributes;  // lowercased names, unescaped values
};

// Scans the page tag by tag. `next` returns false at the end; an error for a tag, comment or
// quoted value that never ends.
class TagScanner {
 public:
  TagScanner(std::string_view html, std::string_view url) : m_html(html), m_url(url) {}

  Result<bool> next(Tag& tag) {
    for (;;) {
      std::size_t open = m_html.find('<', m_pos);
      if (open == std::string_view::npos) return false;
      m_pos = open + 1;
      if (m_html.substr(open).starts_with("<!--")) {
        std::size_t end = m_html.find("-->", open + 4);
        if (end == std::string_view::npos) return malformed(open, "a comment is never closed");
        m_pos = end + 3;
        continue;
      }
      if (m_pos < m_html.size() && (m_html[m_pos] == '!' || m_html[m_pos] == '?')) {
        std::size_t end = m_html.find('>', m_pos);
        if (end == std::string_view::npos) return malformed(open, "a declaration is never closed");
        m_pos = end + 1;
        continue;
      }
      tag = Tag{};
      if (m_pos < m_html.size() && m_html[m_pos] == '/') {
        tag.closing = true;
        ++m_pos;
      }
      std::size_t name_start = m_pos;
      while (m_pos < m_html.size() && is_name_char(m_html[m_pos])) ++m_pos;
      if (m_pos == name_start) continue;  // a lone '<' in text
      tag.name = to_lower_ascii(m_html.substr(name_start, m_pos - name_start));
      VENVFIX_TRY(read_attributes(open, tag));
      return true;
    }
  }

 private:
  Error malformed(std::size_t offset, std::string_view what) const {
    return make_error(ExitCode::network, "the index page {} is malformed HTML: {} (at byte {})",
                      display_url(m_url), what, offset);
  }

  void skip_space() {
    while (m_pos < m_html.size() && (is_ascii_space(m_html[m_pos]) || m_html[m_pos] == '/')) {
      ++m_pos;
    }
  }

  Status read_attributes(std::size_t tag_start, Tag& tag) {
    for (;;) {
      skip_space();
      if (m_pos >= m_html.size()) return malformed(tag_start, "a tag is never closed");
      if (m_html[m_pos] == '>') {
        ++m_pos;
        return ok();
      }
      if (m_html[m_pos] == '<') return malformed(tag_start, "a tag is never closed");
      std::size_t name_start = m_pos;
      while (m_pos < m_html.size() && !is_ascii_space(m_html[m_pos]) && m_html[m_pos] != '=' &&
             m_html[m_pos] != '>' && m_html[m_pos] != '/' && m_html[m_pos] != '<') {
        ++m_pos;
      }
      std::string name = to_lower_ascii(m_html.substr(name_start, m_pos - name_start));
      if (name.empty()) {  // a stray character such as a quote: skip it
        ++m_pos;
        continue;
      }
      while (m_pos < m_html.size() && is_ascii_space(m_html[m_pos])) ++m_pos;
      std::string value;
      if (m_pos < m_html.size() && m_html[m_pos] == '=') {
        ++m_pos;
        while (m_pos < m_html.size() && is_ascii_space(m_html[m_pos])) ++m_pos;
        if (m_pos >= m_html.size()) return malformed(tag_start, "a tag is never closed");
        char quote = m_html[m_pos];
        if (quote == '"' || quote == '\'') {
          std::size_t end = m_html.find(quote, m_pos + 1);
          if (end == std::string_view::npos) {
            return malformed(m_pos, "a quoted attribute value is never closed");
          }
          value = html_unescape(m_html.substr(m_pos + 1, end - m_pos - 1));
          m_pos = end + 1;
        } else {
          std::size_t start = m_pos;
          while (m_pos < m_html.size() && !is_ascii_space(m_html[m_pos]) && m_html[m_pos] != '>') {
            ++m_pos;
          }
          value = html_unescape(m_html.substr(start, m_pos - start));
        }
      }
      tag.attributes.emplace(std::move(name), std::move(value));  // the first one wins, as in HTML
    }
  }

  std::string_view m_html;
  std::string_view m_url;
  std::size_t m_pos = 0;
};

const std::string* attribute(const Tag& tag, const std::string& name) {
  auto it = tag.attributes.find(name);
  return it == tag.attributes.end() ? nullptr : &it->second;
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string html_unescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '&') {
      out.push_back(text[i++]);
      continue;
    }
    std::size_t semicolon = text.find(';', i + 1);
    if (semicolon == std::string_view::npos || semicolon - i > 12) {
      out.push_back(text[i++]);
      continue;
    }
    std::string_view entity = text.substr(i + 1, semicolon - i - 1);
    bool done = true;
    if (entity == "amp") {
      out.push_back('&');
    } else if (entity == "lt") {
      out.push_back('<');
    } else if (entity == "gt") {
      out.push_back('>');
    } else if (entity == "quot") {
      out.push_back('"');
    } else if (entity == "apos") {
      out.push_back('\'');
    } else if (entity.size() >= 2 && entity[0] == '#') {
      bool hex = entity[1] == 'x' || entity[1] == 'X';
      std::string_view digits = entity.substr(hex ? 2 : 1);
      std::uint32_t value = 0;
      done = !digits.empty();
      for (char c : digits) {
        int d = -1;
        if (c >= '0' && c <= '9') d = c - '0';
        if (hex && c >= 'a' && c <= 'f') d = c - 'a' + 10;
        if (hex && c >= 'A' && c <= 'F') d = c - 'A' + 10;
        if (d < 0 || value > 0x10FFFF) {
          done = false;
          break;
        }
        value = value * (hex ? 16u : 10u) + static_cast<std::uint32_t>(d);
      }
      if (done) append_utf8(out, value);
    } else {
      done = false;
    }
    if (done) {
      i = semicolon + 1;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

Result<ProjectPage> parse_html_page(std::string_view html, std::string_view page_url,
                                    std::string_view project) {
  ProjectPage page{std::string(project), std::string(page_url), {}};
  std::string base_url(page_url);
  TagScanner scanner(html, page_url);
  Tag tag;
  for (;;) {
    VENVFIX_TRY_ASSIGN(bool more, scanner.next(tag));
    if (!more) break;
    if (tag.closing) continue;
    if (tag.name == "base") {
      if (const std::string* href = attribute(tag, "href")) {
        base_url = resolve_url(base_url, *href);
      }
      continue;
    }
    if (tag.name != "a") continue;
    const std::string* href = attribute(tag, "href");
    if (href == nullptr || trim(*href).empty()) continue;
    std::string absolute = resolve_url(base_url, *href);
    detail::LinkAttributes link;
    link.url = absolute;
    if (const std::string* value = attribute(tag, "data-requires-python")) {
      link.requires_python = *value;
    }
    if (const std::string* value = attribute(tag, "data-yanked")) link.yanked = *value;
    // PEP 714 renamed data-dist-info-metadata to data-core-metadata; prefer the new name.
    const std::string* metadata = attribute(tag, "data-core-metadata");
    if (metadata == nullptr) metadata = attribute(tag, "data-dist-info-metadata");
    if (metadata != nullptr) link.core_metadata = *metadata;
    VENVFIX_TRY_ASSIGN(IndexFile file, detail::file_from_link(link, page_url));
    page.files.push_back(std::move(file));
  }
  return page;
}

}  // namespace venvfix::index
