#include "venvfix/index/client.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "venvfix/base/sha256.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/index/page_parser.hpp"
#include "venvfix/index/url.hpp"
#include "venvfix/pep/name.hpp"

namespace venvfix::index {

namespace {

std::string with_trailing_slash(std::string url) {
  if (url.empty() || url.back() != '/') url.push_back('/');
  return url;
}

// A find-links entry or file:// index as a URL: plain paths become file:// URLs.
std::string location_url(const std::string& location) {
  if (split_url(location).scheme.size() > 1) return location;  // "C:" is not a scheme
  std::error_code error;
  return path_to_file_url(
      location, fs::is_directory(location, error) ? UrlTarget::directory : UrlTarget::file);
}

// Files of a local directory, as links (no hash: the download computes it).
std::vector<IndexFile> list_directory(const fs::path& dir) {
  std::vector<IndexFile> files;
  std::error_code error;
  for (auto it = fs::directory_iterator(dir, error); !error && it != fs::directory_iterator();
       it.increment(error)) {
    std::error_code type_error;
    if (!it->is_regular_file(type_error)) continue;
    std::string name = it->path().filename().string();
    if (name == "index.html" || name == "index.json" || name.ends_with(".metadata")) continue;
    IndexFile file;
    file.filename = name;
    file.url = path_to_file_url(it->path(), UrlTarget::file);
    std::error_code size_error;
    auto size = it->file_size(size_error);
    if (!size_error) file.size = size;
    files.push_back(std::move(file));
  }
  std::sort(files.begin(), files.end(),
            [](const IndexFile& a, const IndexFile& b) { return a.filename < b.filename; });
  return files;
}

// Links on a page fetched with credentials keep them when they point at the same host.
void propagate_credentials(ProjectPage& page, const std::string& request_url) {
  std::optional<std::string> user_info = url_user_info(request_url);
  if (!user_info) return;
  std::string host = url_host_port(request_url);
  if (!url_user_info(page.page_url) && url_host_port(page.page_url) == host) {
    page.page_url = with_user_info(page.page_url, *user_info);
  }
  for (IndexFile& file : page.files) {
    if (!url_user_info(file.url) && url_host_port(file.url) == host) {
      file.url = with_user_info(file.url, *user_info);
    }
  }
}

}  // namespace

IndexConfig with_find_links_reachable(IndexConfig config) {
  for (const std::string& location : config.find_links) {
    const std::string url = location_url(location);
    if (!is_http_url(url)) continue;
    // The page's directory: the wheels a wheelhouse page links lie beside it.
    const std::string plain = url.substr(0, url.find_first_of("?#"));
    const std::size_t slash = plain.rfind('/');
    std::string prefix = slash == std::string::npos ? plain : plain.substr(0, slash + 1);
    if (std::find(config.reachable_offline.begin(), config.reachable_offline.end(), prefix) ==
        config.reachable_offline.end()) {
      config.reachable_offline.push_back(std::move(prefix));
    }
  }
  return config;
}

Result<std::vector<IndexFile>> IndexClient::find_links_listing() {
  std::vector<IndexFile> all;
  for (const std::string& location : m_config.find_links) {
    VENVFIX_TRY_ASSIGN(std::vector<IndexFile> files, find_links_files(location));
    all.insert(all.end(), files.begin(), files.end());
  }
  return all;
}

bool file_belongs_to(std::string_view filename, std::string_view project) {
  // Wheels escape '-' in the name as '_', so the name ends at the first '-'. Sdists
  // ("my-name-1.0.tar.gz") may keep '-' in the name: it ends at a '-' before a digit.
  if (filename.ends_with(".whl")) {
    return pep::normalize_name(filename.substr(0, filename.find('-'))) == project;
  }
  for (std::size_t dash = filename.find('-'); dash != std::string_view::npos;
       dash = filename.find('-', dash + 1)) {
    bool version_follows =
        dash + 1 < filename.size() && filename[dash + 1] >= '0' && filename[dash + 1] <= '9';
    if (version_follows && pep::normalize_name(filename.substr(0, dash)) == project) return true;
  }
  return false;
}

IndexClient::IndexClient(IndexConfig config)
    : m_config(with_find_links_reachable(std::move(config))),
      m_owned_downloader(std::make_unique<fetch::Downloader>(m_config)),
      m_downloader(m_owned_downloader.get()) {}

IndexClient::IndexClient(IndexConfig config, fetch::Downloader& downloader)
    : m_config(with_find_links_reachable(std::move(config))), m_downloader(&downloader) {}

IndexClient::~IndexClient() = default;

Result<IndexClient::Lookup> IndexClient::from_local_index(const std::string& page_url,
                                                          const std::string& project,
                                                          ProjectPage& page) {
  VENVFIX_TRY_ASSIGN(fs::path dir, file_url_to_path(page_url));
  std::error_code error;
  if (!fs::is_directory(dir, error)) return Lookup::absent;
  page.page_url = page_url;
  for (const char* name : {"index.html", "index.json"}) {  // pip reads index.html
    fs::path file = dir / name;
    if (!fs::is_regular_file(file, error)) continue;
    Result<std::string> text = read_file(file, 256u << 20);
    if (!text) return Error{ExitCode::network, text.error().message};
    VENVFIX_TRY_ASSIGN(
        ProjectPage parsed,
        parse_page(*text, std::string_view(name) == "index.json" ? k_simple_json : "", page_url,
                   project));
    page.files = std::move(parsed.files);
    return Lookup::found;
  }
  page.files = list_directory(dir);
  return Lookup::found;
}

Result<IndexClient::Lookup> IndexClient::from_index(const std::string& index_url,
                                                    const std::string& project, ProjectPage& page) {
  std::string page_url = with_trailing_slash(index_url) + project + "/";
  if (is_file_url(index_url)) return from_local_index(page_url, project, page);
  if (!is_http_url(index_url)) {
    return make_error(ExitCode::usage, "the index URL {} is neither http(s):// nor file://",
                      display_url(index_url));
  }
  Result<fetch::TextResponse> fetched =
      m_downloader->get_page(page_url, {std::string(k_accept_simple)});
  if (!fetched && m_config.offline) {
    spdlog::info("offline, and {} for {} is not in the page cache", display_url(page_url), project);
    return Lookup::uncached;
  }
  VENVFIX_TRY_ASSIGN(fetch::TextResponse response, std::move(fetched));
  if (response.status == 404 || response.status == 410) {
    spdlog::info("{} has no project {} (HTTP {})", display_url(index_url), project,
                 response.status);
    return Lookup::absent;
  }
  if (response.status < 200 || response.status > 299) {
    const char* hint = (response.status == 401 || response.status == 403)
                           ? " (give credentials in the index URL or in ~/.netrc or $NETRC)"
                           : "";
    return make_error(ExitCode::network, "the index page {} answered HTTP {}{}",
                      display_url(page_url), response.status, hint);
  }
  // Links resolve against where the page really came from (after redirects).
  std::string effective = response.effective_url.empty() ? page_url : response.effective_url;
  if (auto user_info = url_user_info(page_url);
      user_info && !url_user_info(effective) &&
      url_host_port(effective) == url_host_port(page_url)) {
    effective = with_user_info(effective, *user_info);
  }
  VENVFIX_TRY_ASSIGN(ProjectPage parsed,
                     parse_page(response.body, response.content_type, effective, project));
  page = std::move(parsed);
  propagate_credentials(page, page_url);
  return Lookup::found;
}

Result<std::vector<IndexFile>> IndexClient::find_links_files(const std::string& location) {
  if (auto it = m_find_links_cache.find(location); it != m_find_links_cache.end()) {
    return it->second;
  }
  std::string url = location_url(location);
  std::vector<IndexFile> files;
  if (is_file_url(url)) {
    VENVFIX_TRY_ASSIGN(fs::path path, file_url_to_path(url));
    std::error_code error;
    if (fs::is_directory(path, error)) {
      files = list_directory(path);
    } else if (fs::is_regular_file(path, error)) {
      Result<std::string> text = read_file(path, 256u << 20);
      if (!text) return Error{ExitCode::network, text.error().message};
      VENVFIX_TRY_ASSIGN(ProjectPage page, parse_html_page(*text, url, ""));
      files = std::move(page.files);
    } else {
      return make_error(ExitCode::network, "the find-links location {} does not exist",
                        path.string());
    }
  } else if (is_http_url(url)) {
    Result<fetch::TextResponse> fetched = m_downloader->get_page(url, {"text/html"});
    if (!fetched && fetch::blocked_offline(m_config, url)) {
      spdlog::info("offline, and the find-links page {} is not in the page cache",
                   display_url(url));
      return files;
    }
    VENVFIX_TRY_ASSIGN(fetch::TextResponse response, std::move(fetched));
    if (response.status < 200 || response.status > 299) {
      return make_error(ExitCode::network, "the find-links page {} answered HTTP {}",
                        display_url(url), response.status);
    }
    std::string effective = response.effective_url.empty() ? url : response.effective_url;
    VENVFIX_TRY_ASSIGN(ProjectPage page, parse_html_page(response.body, effective, ""));
    propagate_credentials(page, url);
    files = std::move(page.files);
  } else {
    return make_error(ExitCode::usage, "the find-links location {} is not a path or URL",
                      display_url(location));
  }
  m_find_links_cache.emplace(location, files);
  return files;
}

Result<ProjectPage> IndexClient::project(std::string_view name) {
  std::string project = pep::normalize_name(name);
  ProjectPage page{project, "", {}};
  bool found = false;
  std::optional<std::string> uncached;  // offline: the index page no earlier run cached
  for (const std::string& index_url : m_config.index_urls) {
    VENVFIX_TRY_ASSIGN(Lookup lookup, from_index(index_url, project, page));
    if (lookup == Lookup::found) {
      found = true;
      spdlog::info("{}: using {}", project, display_url(page.page_url));
      break;
    }
    if (lookup == Lookup::uncached) {
      // A later index must not answer for this one (the first index that has a project is
      // the only one used): only find-links can still help.
      uncached = with_trailing_slash(index_url) + project + "/";
      break;
    }
  }
  page.project = project;
  for (const std::string& location : m_config.find_links) {
    VENVFIX_TRY_ASSIGN(std::vector<IndexFile> files, find_links_files(location));
    for (IndexFile& file : files) {
      if (!file_belongs_to(file.filename, project)) continue;
      found = true;
      page.files.push_back(std::move(file));
    }
  }
  if (!found && uncached) {
    return make_error(ExitCode::network,
                      "offline, and no earlier run cached the index page of project '{}' ({}); "
                      "run venvfix once online or give --find-links",
                      project, display_url(*uncached));
  }
  if (uncached) {
    spdlog::warn("offline: {} is not cached, so {} comes from find-links only",
                 display_url(*uncached), project);
  }
  if (!found) {
    std::vector<std::string> places;
    for (const std::string& url : m_config.index_urls) places.push_back(display_url(url));
    for (const std::string& url : m_config.find_links) places.push_back(display_url(url));
    return make_error(ExitCode::network, "no index has a project named '{}' (looked in {}{})",
                      project, join(places, ", "),
                      m_config.offline ? "; offline, from the page cache" : "");
  }
  return page;
}

Result<std::string> IndexClient::core_metadata(const IndexFile& file) {
  if (!file.has_core_metadata) {
    return make_error(ExitCode::network, "the index offers no separate metadata for {} ({})",
                      file.filename, display_url(file.url));
  }
  std::string url = file.url + ".metadata";
  Result<fetch::TextResponse> fetched = m_downloader->get_page(url, {}, 16u << 20);
  if (!fetched && m_config.offline) {
    return make_error(ExitCode::network, "offline, and the metadata of {} is not in the page cache",
                      file.filename);
  }
  VENVFIX_TRY_ASSIGN(fetch::TextResponse response, std::move(fetched));
  if (response.status < 200 || response.status > 299) {
    return make_error(ExitCode::network, "cannot fetch the metadata {}: HTTP {}", display_url(url),
                      response.status);
  }
  if (file.core_metadata_sha256) {
    std::string actual = to_hex(sha256(response.body));
    if (actual != *file.core_metadata_sha256) {
      return make_error(ExitCode::network, "the sha256 of {} is {}, but the index says {}",
                        display_url(url), actual, *file.core_metadata_sha256);
    }
  }
  return std::move(response.body);
}

}  // namespace venvfix::index
