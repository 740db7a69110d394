#include "venvfix/apply/wheelhouse.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/log.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/index/page_parser.hpp"
#include "venvfix/index/url.hpp"

namespace venvfix::apply {

namespace {

constexpr const char* k_index_page = "index.html";

std::vector<const plan::Install*> installs_of(const plan::Plan& plan) {
  std::vector<const plan::Install*> out;
  for (const plan::Action& action : plan.actions) {
    if (const auto* install = std::get_if<plan::Install>(&action)) out.push_back(install);
  }
  return out;
}

// Whether `path` already holds the wheel: same size, then same sha256.
bool holds(const fs::path& path, const plan::Install& wheel) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) return false;
  const auto size = fs::file_size(path, error);
  if (error || (wheel.size != 0 && size != wheel.size)) return false;
  Result<Sha256Digest> digest = sha256_file(path);
  return digest && to_hex(*digest) == wheel.sha256;
}

// Copies the cache blob to `dest/file` through a temporary name: fsynced, then renamed, so a
// web server serving `dest` never sees a partial wheel.
Status publish(const fs::path& blob, const fs::path& dest, const std::string& file) {
  const fs::path target = dest / file;
  const fs::path temporary = dest / ("." + file + ".venvfix-tmp");
  std::error_code error;
  fs::copy_file(blob, temporary, fs::copy_options::overwrite_existing, error);
  if (error) {
    return make_error(ExitCode::error, "cannot write {}: {}", temporary.string(), error.message());
  }
  fs::permissions(temporary, fs::perms(0644), error);
  Status synced = [&]() -> Status {
    VENVFIX_TRY_ASSIGN(Fd fd, open_file(temporary, O_RDONLY | O_CLOEXEC));
    if (::fsync(fd.get()) != 0) {
      return make_error(ExitCode::error, "cannot write {}: {}", temporary.string(),
                        errno_message(errno));
    }
    return ok();
  }();
  if (synced) {
    fs::rename(temporary, target, error);
    if (error) {
      synced = make_error(ExitCode::error, "cannot write {}: {}", target.string(), error.message());
    }
  }
  if (!synced) fs::remove(temporary, error);
  return synced;
}

// Every `*.whl` in `dest` with its sha256: the plan's from the plan, any other (an earlier
// plan's) hashed now, so that the page stays right whatever else the directory holds.
Result<std::map<std::string, std::string>> wheels_in(const fs::path& dest,
                                                     const std::vector<WheelhouseWheel>& known) {
  std::map<std::string, std::string> out;
  for (const WheelhouseWheel& wheel : known) out[wheel.file] = wheel.sha256;
  std::error_code error;
  for (auto it = fs::directory_iterator(dest, error); !error && it != fs::directory_iterator();
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    std::error_code type_error;
    if (!name.ends_with(".whl") || name.front() == '.' || !it->is_regular_file(type_error) ||
        out.contains(name)) {
      continue;
    }
    VENVFIX_TRY_ASSIGN(Sha256Digest digest, sha256_file(it->path()));
    out[name] = to_hex(digest);
  }
  if (error)
    return make_error(ExitCode::error, "cannot list {}: {}", dest.string(), error.message());
  return out;
}

Result<std::size_t> write_index_page(const fs::path& dest,
                                     const std::vector<WheelhouseWheel>& known) {
  VENVFIX_TRY_ASSIGN(auto wheels, wheels_in(dest, known));
  std::string page =
      "<!DOCTYPE html>\n<html>\n<head><meta name=\"pypi:repository-version\" content=\"1.0\">"
      "<title>wheelhouse</title></head>\n<body>\n";
  for (const auto& [name, sha256] : wheels) {
    page += fmt::format("<a href=\"{}#sha256={}\">{}</a><br>\n", index::percent_encode_path(name),
                        sha256, index::html_escape(name));
  }
  page += "</body>\n</html>\n";
  VENVFIX_TRY(write_file_atomic(dest / k_index_page, page));
  return wheels.size();
}

}  // namespace

Result<WheelhouseReport> fill_wheelhouse(const plan::Plan& plan, fetch::Downloader& downloader,
                                         const fs::path& dest, const WheelSources& sources) {
  VENVFIX_TRY(check_wheel_file_names(plan));
  const std::vector<const plan::Install*> installs = installs_of(plan);
  std::vector<fetch::DownloadRequest> requests;
  requests.reserve(installs.size());
  for (const plan::Install* install : installs) {
    requests.push_back(download_request(*install, sources));
  }
  VENVFIX_TRY_ASSIGN(std::vector<fetch::DownloadResult> downloaded,
                     downloader.download_all(requests));
  std::error_code error;
  fs::create_directories(dest, error);
  if (error)
    return make_error(ExitCode::error, "cannot create {}: {}", dest.string(), error.message());

  WheelhouseReport report;
  report.dest = dest;
  report.index_page = dest / k_index_page;
  for (std::size_t i = 0; i < installs.size(); ++i) {
    const plan::Install& install = *installs[i];
    WheelhouseWheel wheel{install.file,   install.dist,       install.version,
                          install.sha256, downloaded[i].size, downloaded[i].from_cache,
                          false};
    if (!holds(dest / install.file, install)) {
      VENVFIX_TRY(publish(downloaded[i].path, dest, install.file));
      wheel.written = true;
    }
    spdlog::debug("{}: {}", install.file, wheel.written ? "written" : "already there");
    report.wheels.push_back(std::move(wheel));
  }
  VENVFIX_TRY(fsync_directory(dest));
  VENVFIX_TRY_ASSIGN(report.listed, write_index_page(dest, report.wheels));
  return report;
}

Result<WheelSources> find_links_sources(const plan::Plan& plan, index::IndexClient& index) {
  WheelSources sources;
  if (index.config().find_links.empty()) return sources;
  VENVFIX_TRY_ASSIGN(std::vector<index::IndexFile> listed, index.find_links_listing());
  for (const plan::Install* install : installs_of(plan)) {
    const auto found = std::find_if(listed.begin(), listed.end(), [&](const index::IndexFile& f) {
      return f.filename == install->file;
    });
    if (found == listed.end()) continue;
    if (found->sha256_hex && *found->sha256_hex != install->sha256) {
      return make_error(ExitCode::network,
                        "the find-links location lists {} with sha256 {}, but the plan says {}: "
                        "it serves another build under the same name ({})",
                        install->file, *found->sha256_hex, install->sha256,
                        index::display_url(found->url));
    }
    spdlog::info("{}: from {}", install->file, index::display_url(found->url));
    sources.emplace(install->file, found->url);
  }
  return sources;
}

nlohmann::json wheelhouse_json(const WheelhouseReport& report) {
  nlohmann::json wheels = nlohmann::json::array();
  for (const WheelhouseWheel& wheel : report.wheels) {
    wheels.push_back({{"file", wheel.file},
                      {"dist", wheel.dist},
                      {"version", wheel.version},
                      {"sha256", wheel.sha256},
                      {"size", wheel.size},
                      {"from_cache", wheel.from_cache},
                      {"written", wheel.written}});
  }
  return {{"schema", "venvfix-fetch/1"},
          {"dest", report.dest.string()},
          {"index_page", report.index_page.string()},
          {"wheels", std::move(wheels)},
          {"listed", report.listed}};
}

void print_wheelhouse_report(const WheelhouseReport& report, std::ostream& out) {
  for (const WheelhouseWheel& wheel : report.wheels) {
    out << "  " << wheel.file << (wheel.written ? "  written" : "  already there") << "\n";
  }
  out << report.wheels.size() << " wheel" << (report.wheels.size() == 1 ? "" : "s")
      << " of the plan in " << report.dest.string() << "; " << report.index_page.filename().string()
      << " lists " << report.listed << "\n";
}

}  // namespace venvfix::apply
