// Project pages from the configured indexes and find-links, and PEP 658 core metadata.
//
// For each project the first index (IndexConfig::index_urls order) that has a page for it is
// the only index used; an index answering 404 or 410 does not have it, any other failure is an
// Error (ExitCode::network, naming the redacted URL) rather than a silent fall-through, so a
// broken mirror never lets a later index's files in. Files found through find-links are merged
// into the page. Index URLs may be http(s):// (PEP 691 JSON preferred, PEP 503 HTML accepted)
// or file:// (a directory tree: <root>/<project>/index.html, or the directory's files when
// it has no index.html). http(s) pages and metadata go through the download cache's page
// cache (fetch::Downloader::get_page: HTTP caching rules, revalidation). Offline they come from
// that cache only: a project whose page on the first index no earlier run cached is an Error
// naming the project (ExitCode::network), unless find-links have it; an index page cached as
// 404 still sends the lookup on to the next index.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/fetch/downloader.hpp"
#include "venvfix/index/config.hpp"
#include "venvfix/index/project_page.hpp"

namespace venvfix::index {

class IndexClient {
 public:
  explicit IndexClient(IndexConfig config);
  // Shares `downloader` (and its connections) instead of making one.
  IndexClient(IndexConfig config, fetch::Downloader& downloader);
  ~IndexClient();
  IndexClient(const IndexClient&) = delete;
  IndexClient& operator=(const IndexClient&) = delete;

  // The files of `name` (any spelling; normalised per PEP 503). ProjectPage::page_url names the
  // index page used ("" when only find-links had the project).
  Result<ProjectPage> project(std::string_view name);

  // The file's METADATA served beside it (PEP 658/714 "<url>.metadata"), checked against the
  // index's sha256 when it gives one. An error when the index offers none: the caller then
  // downloads the wheel and reads METADATA from it.
  Result<std::string> core_metadata(const IndexFile& file);

  // Every file the find-links locations list, in their order (a location listed once per
  // client). Errors as for project().
  Result<std::vector<IndexFile>> find_links_listing();

  const IndexConfig& config() const { return m_config; }
  fetch::Downloader& downloader() { return *m_downloader; }

 private:
  enum class Lookup { found, absent, uncached };
  Result<Lookup> from_index(const std::string& index_url, const std::string& project,
                            ProjectPage& page);
  Result<Lookup> from_local_index(const std::string& page_url, const std::string& project,
                                  ProjectPage& page);
  Result<std::vector<IndexFile>> find_links_files(const std::string& location);

  IndexConfig m_config;
  std::unique_ptr<fetch::Downloader> m_owned_downloader;
  fetch::Downloader* m_downloader;
  std::map<std::string, std::vector<IndexFile>> m_find_links_cache;
};

// `config` with the directory of each http(s) find-links location added to
// FetchConfig::reachable_offline: `--offline` reads no index, but the find-links the user named
// (a fleet's wheelhouse) stay reachable, as pip's `--no-index --find-links URL`. The clients
// apply it to their configuration themselves.
IndexConfig with_find_links_reachable(IndexConfig config);

// Whether `filename` (a wheel or sdist name) belongs to the normalised project `project`.
bool file_belongs_to(std::string_view filename, std::string_view project);

}  // namespace venvfix::index
