#include "venvfix/apply/stage.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/log.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/pep/version.hpp"

namespace venvfix::apply {

namespace {

// The wheel's name and version must be the ones the plan promises.
Status check_identity(const wheel::WheelContents& contents, const plan::Action& action) {
  auto version = pep::Version::parse(action.version);
  if (pep::normalize_name(action.dist) != contents.filename.normalized_name || !version ||
      !(*version == contents.filename.version)) {
    return make_error(ExitCode::usage,
                      "the plan installs {} {} but its wheel {} is {} {}; the plan is refused",
                      action.dist, action.version, contents.display_name, contents.metadata.name,
                      contents.metadata.version);
  }
  return ok();
}

// The cache names blobs by hash; read_wheel needs the wheel's own file name (its name and
// version come from it), so each blob is reached through a symlink of that name.
Result<fs::path> named_link(const fs::path& dir, const StageItem& item) {
  const fs::path name(item.file_name);
  if (item.file_name.empty() || name.filename() != name || item.file_name == "." ||
      item.file_name == ".." || !name.string().ends_with(".whl")) {
    return make_error(ExitCode::usage,
                      "the plan names the wheel file \"{}\", which is not a .whl "
                      "file name",
                      item.file_name);
  }
  fs::path link = dir / name;
  if (::symlink(fs::absolute(item.wheel).c_str(), link.c_str()) != 0) {
    return make_error(ExitCode::error, "{}: {}", link.string(), errno_message(errno));
  }
  return link;
}

// Asks the kernel to start writing a staged wheel's files to disk now, without waiting. The
// transaction makes them durable before the journal names them (Transaction::begin); started
// here, that writeback overlaps the other wheels' downloads and unpacking instead of all of it
// happening at the end.
void start_writeback(const fs::path& staging, const wheel::InstallResult& install) {
  Fd dir(::open(staging.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return;
  for (const wheel::InstalledFile& file : install.files) {
    Fd fd(::openat(dir.get(), file.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.valid()) ::sync_file_range(fd.get(), 0, 0, SYNC_FILE_RANGE_WRITE);
  }
}

// Reads, checks and installs one wheel (reached through `link`, its own file name) into staging.
Result<StagedWheel> stage_one(const env::Venv& venv, const plan::Plan& plan, const StageItem& item,
                              const fs::path& link, const fs::path& staging,
                              const StageOptions& options) {
  const plan::Action& action = plan.actions[item.action];
  VENVFIX_TRY_ASSIGN(wheel::WheelContents contents, wheel::read_wheel(link));
  VENVFIX_TRY(check_identity(contents, action));
  wheel::InstallOptions install_options;
  install_options.requested = item.requested;
  install_options.umask = options.umask;
  install_options.python_executable = options.python;
  std::optional<wheel::UnpackedCache> unpacked_cache;
  if (item.unpacked) {
    install_options.from_unpacked = &*item.unpacked;
    install_options.link_mode = options.link_mode;
  } else if (options.unpacked_cache) {
    unpacked_cache.emplace(*options.unpacked_cache);
    install_options.keep_unpacked = &*unpacked_cache;
    install_options.wheel_sha256_hex = action.sha256;
  }
  auto result = wheel::install_wheel(contents, venv, staging, install_options);
  if (!result) return with_context(std::move(result).error(), "cannot unpack " + item.file_name);
  start_writeback(staging, *result);
  spdlog::debug("staged {} ({} files)", item.file_name, result->files.size());
  return StagedWheel{item.action, contents.metadata.name, contents.metadata.version,
                     std::move(result).value()};
}

// The plan's install actions as download requests, their file names checked first (a usage
// error costs no download).
Status check_file_names(const plan::Plan& plan) {
  std::set<std::string> seen;
  for (const plan::Action& action : plan.actions) {
    if (action.kind != plan::ActionKind::install) continue;
    const fs::path name(action.file);
    if (action.file.empty() || name.filename() != name || action.file == "." ||
        action.file == ".." || !action.file.ends_with(".whl")) {
      return make_error(ExitCode::usage,
                        "the plan names the wheel file \"{}\", which is not a .whl file name",
                        action.file);
    }
    if (!seen.insert(action.file).second) {
      return make_error(ExitCode::usage, "the plan installs the wheel {} twice", action.file);
    }
  }
  return ok();
}

fetch::DownloadRequest request_for(const plan::Action& action) {
  fetch::DownloadRequest request;
  request.url = action.url;
  // The plan's hash is the contract: never download without one (parse_plan requires it).
  request.sha256_hex = action.sha256;
  if (action.size != 0) request.size = action.size;
  request.display_name = action.file;
  return request;
}

}  // namespace

Result<std::vector<FetchedWheel>> download_plan_wheels(const plan::Plan& plan,
                                                       fetch::Downloader& downloader) {
  std::vector<fetch::DownloadRequest> requests;
  std::vector<std::size_t> actions;
  for (std::size_t i = 0; i < plan.actions.size(); ++i) {
    const plan::Action& action = plan.actions[i];
    if (action.kind != plan::ActionKind::install) continue;
    requests.push_back(request_for(action));
    actions.push_back(i);
  }
  if (requests.empty()) return std::vector<FetchedWheel>{};
  VENVFIX_TRY_ASSIGN(std::vector<fetch::DownloadResult> results, downloader.download_all(requests));
  std::vector<FetchedWheel> out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    // download_all checked the digest; checking again here keeps the promise independent of
    // the downloader's internals (and costs a string compare).
    if (results[i].sha256_hex != plan.actions[actions[i]].sha256) {
      return make_error(ExitCode::network, "{} has sha256 {}, the plan says {}",
                        redact_url(requests[i].url), results[i].sha256_hex,
                        plan.actions[actions[i]].sha256);
    }
    out.push_back({actions[i], results[i].path, results[i].size, results[i].from_cache});
  }
  return out;
}

Result<std::vector<StagedWheel>> stage_wheels(const env::Venv& venv, const plan::Plan& plan,
                                              std::span<const StageItem> items,
                                              const fs::path& staging,
                                              const StageOptions& options) {
  VENVFIX_TRY_ASSIGN(TempDir links, TempDir::create("venvfix-wheels-"));
  std::vector<fs::path> paths;
  for (const StageItem& item : items) {
    if (item.action >= plan.actions.size()) {
      return make_error(ExitCode::error, "stage item names action {} of {}", item.action,
                        plan.actions.size());
    }
    // Two actions naming the same file would link the same name twice: refuse it clearly.
    for (const fs::path& seen : paths) {
      if (seen.filename() == item.file_name) {
        return make_error(ExitCode::usage, "the plan installs the wheel {} twice", item.file_name);
      }
    }
    VENVFIX_TRY_ASSIGN(fs::path link, named_link(links.path(), item));
    paths.push_back(std::move(link));
  }

  std::vector<std::optional<StagedWheel>> staged(items.size());
  std::optional<Error> failure;
  std::mutex failure_mutex;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};

  auto work = [&] {
    for (;;) {
      if (stop.load()) return;
      std::size_t i = next.fetch_add(1);
      if (i >= items.size()) return;
      auto result = stage_one(venv, plan, items[i], paths[i], staging, options);
      if (!result) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::move(result).error();
        stop.store(true);
        return;
      }
      staged[i] = std::move(result).value();
    }
  };

  const std::size_t thread_count =
      std::min<std::size_t>(items.size(), static_cast<std::size_t>(std::max(1, options.threads)));
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < thread_count; ++t) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();
  if (failure) return std::move(*failure);

  std::vector<StagedWheel> out;
  out.reserve(staged.size());
  for (auto& wheel : staged) out.push_back(std::move(*wheel));
  return out;
}

Result<FetchedAndStaged> fetch_and_stage(
    const env::Venv& venv, const plan::Plan& plan, fetch::Downloader& downloader,
    const fs::path& staging, const std::function<wheel::Requested(std::size_t)>& requested,
    const StageOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  VENVFIX_TRY(check_file_names(plan));
  std::vector<fetch::DownloadRequest> requests;
  std::vector<std::size_t> actions;
  for (std::size_t i = 0; i < plan.actions.size(); ++i) {
    if (plan.actions[i].kind != plan::ActionKind::install) continue;
    requests.push_back(request_for(plan.actions[i]));
    actions.push_back(i);
  }
  FetchedAndStaged out;
  if (requests.empty()) return out;
  VENVFIX_TRY_ASSIGN(TempDir links, TempDir::create("venvfix-wheels-"));
  // Wheels already unpacked in the cache need no download.
  std::vector<std::optional<wheel::UnpackedWheel>> unpacked(requests.size());
  std::vector<fetch::DownloadRequest> to_download;
  std::vector<std::size_t> downloaded_index;  // to_download[k] is requests[downloaded_index[k]]
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (options.unpacked_cache) {
      unpacked[i] =
          wheel::UnpackedCache(*options.unpacked_cache).find(plan.actions[actions[i]].sha256);
    }
    if (unpacked[i]) {
      spdlog::debug("{}: staged from the unpacked-wheel cache", requests[i].display_name);
      continue;
    }
    to_download.push_back(requests[i]);
    downloaded_index.push_back(i);
  }

  // Downloads feed a queue; `options.threads` workers stage each wheel as soon as it is in the
  // cache, so downloading, inflating, hashing and writing overlap.
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::size_t> queue;  // request indices
  bool done = false;
  std::optional<Error> failure;
  std::vector<fetch::DownloadResult> results(requests.size());
  std::vector<std::optional<StagedWheel>> staged(requests.size());

  auto work = [&] {
    for (;;) {
      std::size_t index = 0;
      {
        std::unique_lock lock(mutex);
        ready.wait(lock, [&] { return !queue.empty() || done || failure; });
        if (failure || queue.empty()) return;
        index = queue.front();
        queue.pop_front();
      }
      const plan::Action& action = plan.actions[actions[index]];
      StageItem item{actions[index], results[index].path, action.file,
                     requested ? requested(actions[index]) : wheel::Requested::no, unpacked[index]};
      Result<StagedWheel> result = [&]() -> Result<StagedWheel> {
        VENVFIX_TRY_ASSIGN(fs::path link, named_link(links.path(), item));
        return stage_one(venv, plan, item, link, staging, options);
      }();
      std::lock_guard lock(mutex);
      if (!result) {
        if (!failure) failure = std::move(result).error();
        ready.notify_all();
        return;
      }
      staged[index] = std::move(result).value();
    }
  };
  const std::size_t thread_count = std::min<std::size_t>(
      requests.size(), static_cast<std::size_t>(std::max(1, options.threads)));
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < thread_count; ++t) threads.emplace_back(work);
  {
    std::lock_guard lock(mutex);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (!unpacked[i]) continue;
      results[i].path = unpacked[i]->wheel_file();
      results[i].sha256_hex = plan.actions[actions[i]].sha256;
      results[i].from_cache = true;
      std::error_code ignored;
      results[i].size = fs::file_size(results[i].path, ignored);
      queue.push_back(i);
    }
    ready.notify_all();
  }

  Result<std::vector<fetch::DownloadResult>> downloaded = std::vector<fetch::DownloadResult>{};
  if (!to_download.empty())
    downloaded = downloader.download_each(
        to_download, [&](std::size_t k, const fetch::DownloadResult& result) -> Status {
          std::size_t index = downloaded_index[k];
          std::lock_guard lock(mutex);
          if (failure) return *failure;  // stop the downloads: staging already failed
          if (result.sha256_hex != plan.actions[actions[index]].sha256) {
            failure = make_error(ExitCode::network, "{} has sha256 {}, the plan says {}",
                                 redact_url(to_download[k].url), result.sha256_hex,
                                 plan.actions[actions[index]].sha256);
            ready.notify_all();
            return *failure;
          }
          results[index] = result;
          queue.push_back(index);
          ready.notify_one();
          return ok();
        });
  const auto downloads_end = Clock::now();
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  ready.notify_all();
  for (std::thread& thread : threads) thread.join();
  if (failure) return std::move(*failure);
  if (!downloaded) return std::move(downloaded).error();

  for (std::size_t i = 0; i < requests.size(); ++i) {
    out.fetched.push_back({actions[i], results[i].path, results[i].size, results[i].from_cache});
    out.staged.push_back(std::move(*staged[i]));
  }
  out.download_s = std::chrono::duration<double>(downloads_end - start).count();
  out.stage_tail_s = std::chrono::duration<double>(Clock::now() - downloads_end).count();
  return out;
}

}  // namespace venvfix::apply
