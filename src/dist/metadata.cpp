#include "venvfix/dist/metadata.hpp"

#include "venvfix/base/strings.hpp"
#include "venvfix/base/utf8.hpp"
#include "venvfix/pep/name.hpp"

namespace venvfix::dist {

namespace {

struct Header {
  std::string_view name;
  std::string value;  // unfolded and trimmed
};

// email.feedparser's headerRE: printable ASCII except ":" up to a ":".
bool is_header_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x21 || u > 0x7e || c == ':') return false;
  }
  return true;
}

std::vector<Header> read_headers(std::string_view text) {
  std::vector<Header> headers;
  for (std::string_view line : split_lines(text)) {
    if (line.empty()) break;  // the blank line before the body
    if (line.front() == ' ' || line.front() == '\t') {
      if (headers.empty()) break;  // a continuation with nothing to continue: body
      std::string_view more = trim(line);
      if (!more.empty()) {
        if (!headers.back().value.empty()) headers.back().value += ' ';
        headers.back().value += more;
      }
      continue;
    }
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_header_name(line.substr(0, colon))) break;
    headers.push_back(Header{line.substr(0, colon), std::string(trim(line.substr(colon + 1)))});
  }
  return headers;
}

bool is_printable_ascii(std::string_view text) {
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return false;
  }
  return true;
}

}  // namespace

Result<CoreMetadata> parse_metadata(std::string_view text, std::string_view source_name) {
  CoreMetadata metadata;
  bool have_name = false;
  bool have_version = false;
  bool have_metadata_version = false;
  for (Header& header : read_headers(text)) {
    std::string key = to_lower_ascii(header.name);
    bool kept = key == "name" || key == "version" || key == "metadata-version" ||
                key == "requires-dist" || key == "provides-extra" || key == "requires-python";
    if (!kept) continue;
    if (!is_valid_utf8(header.value) || header.value.find('\0') != std::string::npos) {
      return make_error(ExitCode::usage, "{}: the {} field is not valid UTF-8 text ({})",
                        source_name, header.name, printable_excerpt(header.value));
    }
    if (key == "name" && !have_name) {
      metadata.name = std::move(header.value);
      have_name = true;
    } else if (key == "version" && !have_version) {
      metadata.version = std::move(header.value);
      have_version = true;
    } else if (key == "metadata-version" && !have_metadata_version) {
      metadata.metadata_version = std::move(header.value);
      have_metadata_version = true;
    } else if (key == "requires-dist") {
      if (!header.value.empty()) metadata.requires_dist.push_back(std::move(header.value));
    } else if (key == "provides-extra") {
      if (!header.value.empty()) metadata.provides_extra.push_back(std::move(header.value));
    } else if (key == "requires-python" && !metadata.requires_python) {
      metadata.requires_python = std::move(header.value);
    }
  }
  if (!have_name || metadata.name.empty()) {
    return make_error(ExitCode::usage, "{} has no Name field", source_name);
  }
  if (!pep::is_valid_name(metadata.name)) {
    return make_error(ExitCode::usage, "{}: Name '{}' is not a valid project name", source_name,
                      printable_excerpt(metadata.name));
  }
  if (!have_version || metadata.version.empty()) {
    return make_error(ExitCode::usage, "{} has no Version field", source_name);
  }
  if (!is_printable_ascii(metadata.version) || metadata.version.size() > 256) {
    return make_error(ExitCode::usage, "{}: Version '{}' is not a version", source_name,
                      printable_excerpt(metadata.version));
  }
  return metadata;
}

}  // namespace venvfix::dist
