#include "venvfix/apply/stage.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>

#include <spdlog/spdlog.h>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/log.hpp"
#include "venvfix/base/parallel.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/pep/version.hpp"
#include "venvfix/wheel/arriving_wheel.hpp"

namespace venvfix::apply {

namespace {

using Clock = std::chrono::steady_clock;

// What to unpack: one fetched wheel and how to install it.
struct StageItem {
  std::size_t action = 0;  // index into Plan::actions
  fs::path wheel;          // the .whl to read
  std::string file_name;   // the wheel's file name (the cache blob has none)
  wheel::Requested requested = wheel::Requested::no;
  // Set when the wheel comes out of the unpacked-wheel cache (`wheel` is then its wheel.whl).
  std::optional<wheel::UnpackedWheel> unpacked;
  wheel::ArrivingWheel* arriving = nullptr;  // its members unpacked while it downloaded
};

// The wheel's name and version must be the ones the plan promises.
Status check_identity(const wheel::WheelContents& contents, const plan::Install& action) {
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
  std::error_code error;
  const fs::path target = fs::absolute(item.wheel, error);
  if (error) return make_error(ExitCode::error, "{}: {}", item.wheel.string(), error.message());
  if (::symlink(target.c_str(), link.c_str()) != 0) {
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
  // Staged items are the plan's installs (Pipeline keeps only those).
  const plan::Install& action = *std::get_if<plan::Install>(&plan.actions[item.action]);
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
  } else {
    install_options.arriving = item.arriving;
    if (options.unpacked_cache) {
      unpacked_cache.emplace(*options.unpacked_cache);
      install_options.keep_unpacked = &*unpacked_cache;
      install_options.wheel_sha256_hex = action.sha256;
    }
  }
  auto result = wheel::install_wheel(contents, venv, staging, install_options);
  if (!result) return with_context(std::move(result).error(), "cannot unpack " + item.file_name);
  start_writeback(staging, *result);
  spdlog::debug("staged {} ({} files)", item.file_name, result->files.size());
  return StagedWheel{item.action, contents.metadata.name, contents.metadata.version,
                     std::move(result).value()};
}

}  // namespace

Status check_wheel_file_names(const plan::Plan& plan) {
  std::set<std::string> seen;
  for (const plan::Action& planned : plan.actions) {
    const auto* action = std::get_if<plan::Install>(&planned);
    if (action == nullptr) continue;
    const fs::path name(action->file);
    if (action->file.empty() || name.filename() != name || action->file == "." ||
        action->file == ".." || !action->file.ends_with(".whl")) {
      return make_error(ExitCode::usage,
                        "the plan names the wheel file \"{}\", which is not a .whl file name",
                        action->file);
    }
    if (!seen.insert(action->file).second) {
      return make_error(ExitCode::usage, "the plan installs the wheel {} twice", action->file);
    }
  }
  return ok();
}

fetch::DownloadRequest download_request(const plan::Install& action, const WheelSources& sources) {
  fetch::DownloadRequest request;
  const auto source = sources.find(action.file);
  request.url = source != sources.end() ? source->second : action.url;
  // The plan's hash is the contract: never download without one (parse_plan requires it).
  request.sha256_hex = action.sha256;
  if (action.size != 0) request.size = action.size;
  request.display_name = action.file;
  return request;
}

namespace {

// One fetch_and_stage call: the downloads (job 0 of the pool) feed a queue of wheels in the
// cache; each other job takes the next wheel from it and stages it, so downloading, inflating,
// hashing and writing overlap.
class Pipeline {
 public:
  Pipeline(const env::Venv& venv, const plan::Plan& plan, const fs::path& staging,
           const std::function<wheel::Requested(std::size_t)>& requested,
           const StageOptions& options)
      : m_venv(venv), m_plan(plan), m_staging(staging), m_requested(requested), m_options(options) {
    for (std::size_t i = 0; i < plan.actions.size(); ++i) {
      if (plan::kind_of(plan.actions[i]) == plan::ActionKind::install) m_actions.push_back(i);
    }
    m_results.resize(m_actions.size());
    m_unpacked.resize(m_actions.size());
    m_staged.resize(m_actions.size());
    m_arriving.resize(m_actions.size());
    m_stream = streams_wheels(staging, options);
  }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  // Stops the unpacking threads; removes what they unpacked and nothing adopted.
  ~Pipeline() {
    m_arriving.clear();
    if (!m_arriving_dir.empty()) {
      std::error_code ignored;
      fs::remove_all(m_arriving_dir, ignored);
    }
  }

  Result<FetchedAndStaged> run(fetch::Downloader& downloader) {
    const auto start = Clock::now();
    FetchedAndStaged out;
    if (m_actions.empty()) return out;
    VENVFIX_TRY_ASSIGN(TempDir links, TempDir::create("venvfix-wheels-"));
    m_links = links.path();
    queue_unpacked();
    // One thread downloads (job 0, handed out first), options.threads stage.
    const std::size_t threads = static_cast<std::size_t>(std::max(1, m_options.threads)) + 1;
    VENVFIX_TRY(run_parallel(m_actions.size() + 1, threads,
                             [&](std::size_t job, const JobContext& context) {
                               return job == 0 ? download(downloader, context) : stage_next();
                             }));
    VENVFIX_TRY(stage_from_archives(downloader));
    for (std::size_t i = 0; i < m_actions.size(); ++i) {
      if (!m_staged[i]) return make_error(ExitCode::error, "{} was not staged", file(i));
      const fetch::DownloadResult& result = m_results[i];
      out.fetched.push_back({m_actions[i], result.streamed ? fs::path() : result.path, result.size,
                             result.from_cache, result.streamed});
      out.staged.push_back(std::move(*m_staged[i]));
    }
    out.download_s = std::chrono::duration<double>(m_downloads_end - start).count();
    out.stage_tail_s = std::chrono::duration<double>(Clock::now() - m_downloads_end).count();
    return out;
  }

 private:
  // m_actions holds only installs.
  const plan::Install& action(std::size_t i) const {
    return *std::get_if<plan::Install>(&m_plan.actions[m_actions[i]]);
  }
  const std::string& file(std::size_t i) const { return action(i).file; }

  // Wheels whose sha256 has an intact entry in the unpacked-wheel cache need no download: they
  // are ready to stage at once.
  void queue_unpacked() {
    if (!m_options.unpacked_cache) return;
    const wheel::UnpackedCache cache(*m_options.unpacked_cache);
    for (std::size_t i = 0; i < m_actions.size(); ++i) {
      m_unpacked[i] = cache.find(action(i).sha256);
      if (!m_unpacked[i]) continue;
      spdlog::debug("{}: staged from the unpacked-wheel cache", file(i));
      m_results[i].path = m_unpacked[i]->wheel_file();
      m_results[i].sha256_hex = action(i).sha256;
      m_results[i].from_cache = true;
      std::error_code ignored;
      m_results[i].size = fs::file_size(m_results[i].path, ignored);
      m_queue.push_back(i);
    }
  }

  // Job 0: every other wheel into the download cache, each queued as soon as it is checked.
  Status download(fetch::Downloader& downloader, const JobContext& context) {
    std::vector<fetch::DownloadRequest> requests;
    std::vector<std::size_t> wheel_of;  // requests[k] is wheel wheel_of[k]
    for (std::size_t i = 0; i < m_actions.size(); ++i) {
      if (m_unpacked[i]) continue;
      requests.push_back(download_request(action(i), m_options.sources));
      wheel_of.push_back(i);
      if (wheel::ArrivingWheel* arriving = unpack_while_downloading(i); arriving && m_stream) {
        requests.back().stream = fetch::BodyStream{
            [arriving](std::span<const std::byte> bytes) { return arriving->write(bytes); },
            [arriving](std::size_t size) { return arriving->can_take(size); },
            [arriving] { arriving->restart(); }};
      } else if (arriving) {
        requests.back().on_stored = [arriving](int fd, std::uint64_t stored) {
          arriving->stored(fd, stored);
        };
      }
    }
    std::optional<Error> mismatch;
    Result<std::vector<fetch::DownloadResult>> downloaded = std::vector<fetch::DownloadResult>{};
    if (!requests.empty()) {
      downloaded = downloader.download_each(
          requests, [&](std::size_t k, const fetch::DownloadResult& result) -> Status {
            // A staging failure is the answer; this only stops the downloads.
            if (context.stopping() || failed()) {
              return make_error(ExitCode::error, "staging failed");
            }
            // download_each checked the digest; checking again here keeps the promise
            // independent of the downloader's internals (and costs a string compare).
            if (result.sha256_hex != action(wheel_of[k]).sha256) {
              mismatch = make_error(ExitCode::network, "{} has sha256 {}, the plan says {}",
                                    redact_url(requests[k].url), result.sha256_hex,
                                    action(wheel_of[k]).sha256);
              return *mismatch;
            }
            push(wheel_of[k], result);
            return ok();
          });
    }
    m_downloads_end = Clock::now();
    finish_downloads();
    if (mismatch) return std::move(*mismatch);
    // Stopped because a wheel failed to stage: that failure is the answer.
    if (!downloaded && !failed()) return std::move(downloaded).error();
    return ok();
  }

  // Wheel i's members unpacked as its bytes arrive, into <staging>.arriving/<i> (beside the
  // staging directory: the same filesystem, and removed with it by `recover` after a crash).
  wheel::ArrivingWheel* unpack_while_downloading(std::size_t i) {
    if (m_options.while_downloading != WhileDownloading::unpack) return nullptr;
    if (m_arriving_dir.empty()) {
      fs::path dir = m_staging;
      dir += ".arriving";
      std::error_code error;
      if (!fs::create_directory(dir, error)) {
        spdlog::debug("{}: {}; wheels are unpacked once downloaded", dir.string(),
                      error ? error.message() : "exists");
        return nullptr;
      }
      m_arriving_dir = std::move(dir);
    }
    m_arriving[i] =
        std::make_unique<wheel::ArrivingWheel>(m_arriving_dir / std::to_string(i), action(i).size);
    return m_arriving[i].get();
  }

  void push(std::size_t i, const fetch::DownloadResult& result) {
    std::lock_guard lock(m_mutex);
    m_results[i] = result;
    m_queue.push_back(i);
    m_ready.notify_one();
  }

  void finish_downloads() {
    std::lock_guard lock(m_mutex);
    m_downloads_done = true;
    m_ready.notify_all();
  }

  bool failed() {
    std::lock_guard lock(m_mutex);
    return m_failed;
  }

  // Jobs 1..N: the next wheel in the cache, staged. Returns ok() without work when the
  // downloads ended early (their error is the pool's answer) or another wheel failed.
  Status stage_next() {
    std::size_t i = 0;
    {
      std::unique_lock lock(m_mutex);
      m_ready.wait(lock, [&] { return !m_queue.empty() || m_downloads_done || m_failed; });
      if (m_failed || m_queue.empty()) return ok();
      i = m_queue.front();
      m_queue.pop_front();
    }
    fs::path wheel_file = m_results[i].path;
    if (m_results[i].streamed) {
      // The skeleton stands for the wheel (ArrivingWheel::skeleton): without one, nothing
      // arrived that could be adopted, and the wheel is read from the download cache instead.
      m_arriving[i]->finish(m_results[i].size);
      wheel_file = m_arriving[i]->skeleton();
      if (wheel_file.empty()) return read_archive_later(i, "its members could not be unpacked");
    }
    StageItem item{m_actions[i], wheel_file,    file(i),
                   requested(i), m_unpacked[i], m_arriving[i].get()};
    Result<StagedWheel> staged = stage_item(item, m_links);
    if (!staged && (m_results[i].streamed || m_unpacked[i])) {
      // Not read from the wheel itself: the archive has the last word.
      return read_archive_later(i, staged.error().message);
    }
    if (!staged) {
      std::lock_guard lock(m_mutex);
      m_failed = true;
      m_ready.notify_all();
      return std::move(staged).error();
    }
    m_staged[i] = std::move(staged).value();
    return ok();
  }

  wheel::Requested requested(std::size_t i) const {
    return m_requested ? m_requested(m_actions[i]) : wheel::Requested::no;
  }

  // `links`: named_link's directory, one per round (a wheel read again gets another link).
  Result<StagedWheel> stage_item(const StageItem& item, const fs::path& links) {
    VENVFIX_TRY_ASSIGN(fs::path link, named_link(links, item));
    return stage_one(m_venv, m_plan, item, link, m_staging, m_options);
  }

  // Wheel i, streamed or out of the unpacked-wheel cache, could not be staged that way: it is
  // downloaded into the download cache once the others are staged, and read from there.
  Status read_archive_later(std::size_t i, const std::string& why) {
    spdlog::debug("{}: {}; reading it from the download cache", file(i), why);
    std::lock_guard lock(m_mutex);
    m_from_archive.push_back(i);
    return ok();
  }

  // The wheels read_archive_later() put aside: fetched into the download cache (a cache hit
  // downloads nothing), then staged from their archives, one after another.
  Status stage_from_archives(fetch::Downloader& downloader) {
    if (m_from_archive.empty()) return ok();
    std::sort(m_from_archive.begin(), m_from_archive.end());
    std::vector<fetch::DownloadRequest> requests;
    for (std::size_t i : m_from_archive) {
      requests.push_back(download_request(action(i), m_options.sources));
    }
    VENVFIX_TRY_ASSIGN(std::vector<fetch::DownloadResult> results,
                       downloader.download_all(requests));
    const fs::path links = m_links / "from-archive";
    std::error_code error;
    fs::create_directory(links, error);
    if (error) return make_error(ExitCode::error, "{}: {}", links.string(), error.message());
    for (std::size_t k = 0; k < m_from_archive.size(); ++k) {
      const std::size_t i = m_from_archive[k];
      m_results[i] = std::move(results[k]);
      const StageItem item{m_actions[i], m_results[i].path, file(i), requested(i), {}, nullptr};
      VENVFIX_TRY_ASSIGN(m_staged[i], stage_item(item, links));
    }
    return ok();
  }

  // Streams a wheel into its unpacking without writing the .whl only where the unpacked-wheel
  // cache can keep the installed form, which it links from staging: on the same filesystem.
  static bool streams_wheels(const fs::path& staging, const StageOptions& options) {
    if (options.while_downloading != WhileDownloading::unpack || !options.unpacked_cache) {
      return false;
    }
    fs::path cache = *options.unpacked_cache;
    std::error_code error;
    while (!fs::exists(cache, error) && cache.has_relative_path()) cache = cache.parent_path();
    const auto cache_id = file_identity_follow(cache);
    const auto staging_id = file_identity_follow(staging);
    return cache_id && staging_id && cache_id->device == staging_id->device;
  }

  const env::Venv& m_venv;
  const plan::Plan& m_plan;
  const fs::path& m_staging;
  const std::function<wheel::Requested(std::size_t)>& m_requested;
  const StageOptions& m_options;
  std::vector<std::size_t> m_actions;  // the install actions; "wheel i" is m_actions[i]'s
  std::vector<fetch::DownloadResult> m_results;
  std::vector<std::optional<wheel::UnpackedWheel>> m_unpacked;
  std::vector<std::optional<StagedWheel>> m_staged;
  std::vector<std::unique_ptr<wheel::ArrivingWheel>> m_arriving;  // per wheel, when downloaded
  fs::path m_arriving_dir;
  fs::path m_links;  // named_link's directory
  Clock::time_point m_downloads_end;
  std::mutex m_mutex;
  std::condition_variable m_ready;
  std::deque<std::size_t> m_queue;          // wheels in the cache, not yet taken
  std::vector<std::size_t> m_from_archive;  // wheels to stage from the download cache at the end
  bool m_stream = false;                    // downloads go straight to their ArrivingWheel
  bool m_downloads_done = false;
  bool m_failed = false;
};

}  // namespace

Result<FetchedAndStaged> fetch_and_stage(
    const env::Venv& venv, const plan::Plan& plan, fetch::Downloader& downloader,
    const fs::path& staging, const std::function<wheel::Requested(std::size_t)>& requested,
    const StageOptions& options) {
  VENVFIX_TRY(check_wheel_file_names(plan));
  Pipeline pipeline(venv, plan, staging, requested, options);
  return pipeline.run(downloader);
}

}  // namespace venvfix::apply
