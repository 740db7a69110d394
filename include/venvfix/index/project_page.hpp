// What an index says about one project: its files and, per file, what PEP 503/592/658/691/714
// let an index state (hash, requires-python, yanked, core metadata, size).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace venvfix::index {

struct IndexFile {
  std::string filename;  // the last path segment of `url`, percent-decoded (never contains '/')
  // Absolute URL without fragment. It may carry user-info (the index's credentials) for the
  // request only: show it with display_url(), store it with without_user_info().
  std::string url;
  std::optional<std::string> sha256_hex;       // lowercase; set when the index gives a sha256
  std::optional<std::string> requires_python;  // HTML-unescaped specifier text
  std::optional<std::string> yanked_reason;    // set (maybe empty) only when yanked
  bool yanked = false;
  // PEP 658/714: "<url>.metadata" exists; its sha256 when the index gives one.
  std::optional<std::string> core_metadata_sha256;
  bool has_core_metadata = false;
  std::optional<std::uint64_t> size;  // PEP 700 (JSON API v1.1)

  bool operator==(const IndexFile&) const = default;
};

struct ProjectPage {
  std::string project;   // normalised name (PEP 503)
  std::string page_url;  // the URL the page came from, after redirects (may carry user-info)
  std::vector<IndexFile> files;
};

}  // namespace venvfix::index
