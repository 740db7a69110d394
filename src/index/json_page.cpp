// PEP 691 JSON project pages (api-version 1.x; 1.1 adds "size").
#include <nlohmann/json.hpp>

#include "page_common.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/index/page_parser.hpp"
#include "venvfix/index/url.hpp"

namespace venvfix::index {

namespace {

using nlohmann::json;

Error malformed(std::string_view page_url, std::string_view what) {
  return make_error(ExitCode::network, "the index page {} is malformed JSON: {}",
                    display_url(page_url), what);
}

// "core-metadata" / "dist-info-metadata": false, true, or {"sha256": "…", …}.
Status read_core_metadata(const json& value, IndexFile& file, std::string_view page_url) {
  if (value.is_boolean()) {
    file.has_core_metadata = value.get<bool>();
    return ok();
  }
  if (!value.is_object()) {
    return malformed(page_url, fmt::format("'core-metadata' of {} is neither a boolean nor an "
                                           "object of hashes",
                                           file.filename));
  }
  file.has_core_metadata = true;
  if (auto it = value.find("sha256"); it != value.end()) {
    if (!it->is_string()) return malformed(page_url, "a core-metadata sha256 is not a string");
    VENVFIX_TRY_ASSIGN(file.core_metadata_sha256,
                       detail::checked_sha256(it->get_ref<const std::string&>(),
                                              file.filename + ".metadata", page_url));
  }
  return ok();
}

Result<IndexFile> read_file_entry(const json& entry, std::string_view page_url) {
  if (!entry.is_object()) return malformed(page_url, "an entry of 'files' is not an object");
  auto filename = entry.find("filename");
  auto url = entry.find("url");
  auto hashes = entry.find("hashes");
  if (filename == entry.end() || !filename->is_string()) {
    return malformed(page_url, "a file has no 'filename' string");
  }
  IndexFile file;
  file.filename = filename->get<std::string>();
  VENVFIX_TRY(detail::check_file_name(file.filename, page_url));
  if (url == entry.end() || !url->is_string()) {
    return malformed(page_url, fmt::format("{} has no 'url' string", file.filename));
  }
  file.url = without_fragment(resolve_url(page_url, url->get_ref<const std::string&>()));
  if (hashes != entry.end()) {
    if (!hashes->is_object()) {
      return malformed(page_url, fmt::format("'hashes' of {} is not an object", file.filename));
    }
    if (auto sha = hashes->find("sha256"); sha != hashes->end()) {
      if (!sha->is_string()) {
        return malformed(page_url, fmt::format("the sha256 of {} is not a string", file.filename));
      }
      VENVFIX_TRY_ASSIGN(file.sha256_hex, detail::checked_sha256(sha->get_ref<const std::string&>(),
                                                                 file.filename, page_url));
    }
  }
  if (auto it = entry.find("requires-python"); it != entry.end() && !it->is_null()) {
    if (!it->is_string()) {
      return malformed(page_url,
                       fmt::format("'requires-python' of {} is not a string", file.filename));
    }
    std::string_view text = trim(it->get_ref<const std::string&>());
    if (!text.empty()) file.requires_python = std::string(text);
  }
  if (auto it = entry.find("yanked"); it != entry.end()) {
    if (it->is_boolean()) {
      file.yanked = it->get<bool>();
      if (file.yanked) file.yanked_reason = "";
    } else if (it->is_string()) {
      file.yanked = true;
      file.yanked_reason = it->get<std::string>();
    } else {
      return malformed(
          page_url, fmt::format("'yanked' of {} is neither a boolean nor a string", file.filename));
    }
  }
  // PEP 714: "core-metadata" replaces "dist-info-metadata"; read the new key first.
  auto metadata = entry.find("core-metadata");
  if (metadata == entry.end()) metadata = entry.find("dist-info-metadata");
  if (metadata != entry.end()) VENVFIX_TRY(read_core_metadata(*metadata, file, page_url));
  if (auto it = entry.find("size"); it != entry.end()) {
    if (!it->is_number_unsigned()) {
      return malformed(page_url,
                       fmt::format("'size' of {} is not a non-negative integer", file.filename));
    }
    file.size = it->get<std::uint64_t>();
  }
  return file;
}

}  // namespace

Result<ProjectPage> parse_json_page(std::string_view text, std::string_view page_url,
                                    std::string_view project) {
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return malformed(page_url, "the document does not parse");
  if (!document.is_object()) return malformed(page_url, "the document is not an object");
  auto meta = document.find("meta");
  if (meta == document.end() || !meta->is_object()) {
    return malformed(page_url, "there is no 'meta' object");
  }
  auto version = meta->find("api-version");
  if (version == meta->end() || !version->is_string()) {
    return malformed(page_url, "there is no 'meta.api-version' string");
  }
  const std::string& api_version = version->get_ref<const std::string&>();
  if (!api_version.starts_with("1.") && api_version != "1") {
    return make_error(ExitCode::network,
                      "the index page {} uses simple API version {}, venvfix reads 1.x",
                      display_url(page_url), printable_excerpt(api_version));
  }
  auto files = document.find("files");
  if (files == document.end() || !files->is_array()) {
    return malformed(page_url, "there is no 'files' array");
  }
  ProjectPage page{std::string(project), std::string(page_url), {}};
  page.files.reserve(files->size());
  for (const json& entry : *files) {
    VENVFIX_TRY_ASSIGN(IndexFile file, read_file_entry(entry, page_url));
    page.files.push_back(std::move(file));
  }
  return page;
}

PageFormat page_format(std::string_view content_type, std::string_view body) {
  std::string type = to_lower_ascii(trim(content_type.substr(0, content_type.find(';'))));
  if (type == k_simple_json || type == "application/json") return PageFormat::json;
  if (type == k_simple_html || type == "text/html" || type == "application/xhtml+xml") {
    return PageFormat::html;
  }
  std::string_view start = trim(body.substr(0, 64));
  return !start.empty() && start.front() == '{' ? PageFormat::json : PageFormat::html;
}

Result<ProjectPage> parse_page(std::string_view body, std::string_view content_type,
                               std::string_view page_url, std::string_view project) {
  if (page_format(content_type, body) == PageFormat::json) {
    return parse_json_page(body, page_url, project);
  }
  return parse_html_page(body, page_url, project);
}

}  // namespace venvfix::index
