#include <vector>

#include "internal.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/log.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/dist/metadata.hpp"
#include "venvfix/fetch/downloader.hpp"
#include "venvfix/index/url.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/wheel/wheel.hpp"

namespace venvfix::plan::detail {

std::string IndexView::index_names() const {
  std::vector<std::string> names;
  for (const std::string& url : m_client.config().index_urls) names.push_back(redact_url(url));
  for (const std::string& location : m_client.config().find_links) {
    names.push_back("find-links " + redact_url(location));
  }
  return names.empty() ? std::string("no index") : join(names, ", ");
}

Result<const index::ProjectPage*> IndexView::page(const std::string& name) {
  std::string key = pep::normalize_name(name);
  if (auto it = m_pages.find(key); it != m_pages.end()) return &it->second;
  VENVFIX_TRY_ASSIGN(index::ProjectPage page, m_client.project(key));
  if (page.files.empty()) {
    return make_error(ExitCode::network,
                      "no index has {} ({}{}): pass the index that serves it with --index-url, "
                      "--extra-index-url or --find-links",
                      key, index_names(), m_client.config().offline ? "; offline" : "");
  }
  return &m_pages.emplace(key, std::move(page)).first->second;
}

Result<index::Candidate> IndexView::select(const std::string& name,
                                           const pep::SpecifierSet& specifier) {
  VENVFIX_TRY_ASSIGN(const index::ProjectPage* project, page(name));
  return index::select_wheel(*project, specifier, m_target);
}

namespace {

Result<fetch::DownloadResult> download(index::IndexClient& client,
                                       const index::Candidate& candidate) {
  fetch::DownloadRequest request;
  request.url = candidate.file.url;
  request.sha256_hex = candidate.file.sha256_hex;
  request.size = candidate.file.size;
  request.display_name = candidate.file.filename;
  VENVFIX_TRY_ASSIGN(std::vector<fetch::DownloadResult> results,
                     client.downloader().download_all(std::span(&request, 1)));
  return std::move(results.front());
}

}  // namespace

Result<dist::CoreMetadata> IndexView::metadata(const index::Candidate& candidate) {
  if (candidate.file.has_core_metadata) {
    auto text = m_client.core_metadata(candidate.file);
    if (text) {
      auto parsed =
          dist::parse_metadata(*text, index::display_url(candidate.file.url) + ".metadata");
      if (!parsed) return Error{ExitCode::network, parsed.error().message};  // the index's fault
      return parsed;
    }
    spdlog::debug("{}; reading the wheel instead", text.error().message);
  }
  VENVFIX_TRY_ASSIGN(fetch::DownloadResult downloaded, download(m_client, candidate));
  // The cache names blobs by digest: the wheel's own file name comes from the index.
  VENVFIX_TRY_ASSIGN(MappedFile mapped, MappedFile::open(downloaded.path));
  auto contents = wheel::read_wheel_bytes(mapped.bytes(), candidate.file.filename);
  if (!contents) {
    return make_error(ExitCode::network, "cannot read the metadata of {}: {}",
                      index::display_url(candidate.file.url), contents.error().message);
  }
  return std::move(contents->metadata);
}

Result<IndexView::Digest> IndexView::digest(const index::Candidate& candidate) {
  if (candidate.file.sha256_hex && candidate.file.size) {
    return Digest{*candidate.file.sha256_hex, *candidate.file.size};
  }
  VENVFIX_TRY_ASSIGN(fetch::DownloadResult downloaded, download(m_client, candidate));
  return Digest{downloaded.sha256_hex, downloaded.size};
}

}  // namespace venvfix::plan::detail
