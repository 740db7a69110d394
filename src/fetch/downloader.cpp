#include "venvfix/fetch/downloader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <utility>

#include <spdlog/spdlog.h>

#include "curl_library.hpp"
#include "curl_support.hpp"
#include "local_file.hpp"
#include "local_reads.hpp"
#include "progress.hpp"
#include "transfer.hpp"
#include "transfer_loop.hpp"
#include "venvfix/base/log.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/fetch/cache.hpp"
#include "venvfix/fetch/cache_lock.hpp"

namespace venvfix::fetch {

using detail::Transfer;

struct Downloader::Impl {
  explicit Impl(const FetchConfig& c)
      : config(c), cache(c.cache_dir), session(std::clamp(c.parallel, 1, 64)) {}
  FetchConfig config;
  DownloadCache cache;
  detail::CurlSession session;
  std::optional<CacheLock> cache_lock;  // shared, for the Downloader's life
};

namespace {

std::string default_name(const DownloadRequest& request) {
  if (!request.display_name.empty()) return request.display_name;
  std::string url = redact_url(request.url);
  std::size_t end = url.find_first_of("?#");
  url = url.substr(0, end);
  std::size_t slash = url.rfind('/');
  return slash == std::string::npos ? url : url.substr(slash + 1);
}

// Checks a finished download against the request and moves it into the cache.
Result<DownloadResult> finish_download(const DownloadCache& cache, const DownloadRequest& request,
                                       Transfer& transfer) {
  const std::string url = redact_url(request.url);
  long status = transfer.status();
  if (status != 200 && status != 206) {
    std::string tries = transfer.attempt > 1
                            ? fmt::format(" (gave up after {} attempts)", transfer.attempt)
                            : std::string();
    return make_error(ExitCode::network, "cannot download {}: {}{}", url,
                      detail::describe_status(status), tries);
  }
  if (transfer.expected_total() && *transfer.expected_total() != transfer.bytes()) {
    return make_error(ExitCode::network, "cannot download {}: got {} bytes of {}", url,
                      transfer.bytes(), *transfer.expected_total());
  }
  VENVFIX_TRY_ASSIGN(std::string actual, transfer.finish_hash());
  if (request.sha256_hex && to_lower_ascii(*request.sha256_hex) != actual) {
    return make_error(ExitCode::network,
                      "the sha256 of {} is {}, but {} was expected; the download was discarded",
                      url, actual, to_lower_ascii(*request.sha256_hex));
  }
  if (request.size && *request.size != transfer.bytes()) {
    return make_error(ExitCode::network,
                      "{} has {} bytes, but {} were expected; the download was discarded", url,
                      transfer.bytes(), *request.size);
  }
  std::uint64_t size = transfer.bytes();
  if (request.stream) return DownloadResult{{}, actual, size, false, true};
  VENVFIX_TRY_ASSIGN(fs::path path, cache.commit(transfer.take_file(), actual));
  if (!request.sha256_hex) {
    if (Status remembered = cache.remember_url(request.url, actual); !remembered) {
      spdlog::warn("{}", remembered.error().message);
    }
  }
  return DownloadResult{std::move(path), actual, size, false};
}

// The cache's shared lock (cache_lock.hpp), waiting while `cache prune` holds it. A cache that
// cannot be locked (a read-only one) is used without: nothing can prune it either.
std::optional<CacheLock> lock_cache(const fs::path& cache_dir) {
  std::error_code ignored;
  fs::create_directories(cache_dir, ignored);
  auto lock = CacheLock::acquire(cache_dir, CacheLock::Mode::shared, CacheLock::Wait::wait, [&] {
    spdlog::warn("waiting for `venvfix cache prune` to finish with {}", cache_dir.string());
  });
  if (!lock) {
    spdlog::debug("{}; going on without the cache's lock", lock.error().message);
    return std::nullopt;
  }
  return std::move(*lock);
}

}  // namespace

Downloader::Downloader(const FetchConfig& config) : m_impl(std::make_unique<Impl>(config)) {
  if (config.cache_dir.empty()) return;
  m_impl->cache_lock = lock_cache(config.cache_dir);
  m_impl->cache.remove_stale_temp_files(std::chrono::hours(24));
}

Downloader::~Downloader() = default;

const FetchConfig& Downloader::config() const {
  return m_impl->config;
}

Result<std::vector<DownloadResult>> Downloader::download_all(
    std::span<const DownloadRequest> requests) {
  return download_each(requests, nullptr);
}

namespace {

// One download_each call: sorts the requests into cache hits, duplicates, file:// reads and
// transfers, then settles them: the reads that need no network on threads of their own, several
// at once, while the transfers run (LocalReads), each result reported on this thread as it is
// settled (a duplicate right after its first).
class DownloadBatch {
 public:
  DownloadBatch(const FetchConfig& config, const DownloadCache& cache,
                std::span<const DownloadRequest> requests, const Downloader::OnDownloaded& on_done)
      : m_config(config),
        m_cache(cache),
        m_requests(requests),
        m_on_done(on_done),
        m_results(requests.size()),
        m_is_duplicate(requests.size(), false) {}

  // Reads nothing yet; fails on a bad request, or offline with files missing.
  Status sort() {
    std::vector<std::string> missing;
    for (std::size_t i = 0; i < m_requests.size(); ++i) {
      VENVFIX_TRY_ASSIGN(std::optional<std::string> hex, normalised_hash(m_requests[i]));
      if (std::optional<LocalRead> hit = cache_hit(i, hex)) {
        m_local.push_back(std::move(*hit));
        continue;
      }
      VENVFIX_TRY(route(i, hex ? *hex : redact_url(m_requests[i].url), missing));
    }
    return offline_error(missing);
  }

  // Every request settled and reported; then those whose cached blob turned out damaged or
  // could not be opened, downloaded as if the cache had never held them.
  Status settle(detail::CurlSession& session) {
    detail::Progress progress(m_config.progress, m_requests.size(), m_known_total);
    Status status = settle_sorted(session, progress);
    if (status) status = settle_missed(session, progress);
    if (!status) {
      progress.clear();
      return status;
    }
    progress.summary();
    return ok();
  }

  std::vector<DownloadResult> results() && {
    std::vector<DownloadResult> out;
    out.reserve(m_results.size());
    for (auto& result : m_results) out.push_back(std::move(*result));
    return out;
  }

 private:
  // A request answered without the network: a blob of the cache (`blob`, holding the bytes
  // `known` names unless it turns out otherwise) or, with no blob, a file:// URL.
  struct LocalRead {
    std::size_t index;
    fs::path blob;
    std::string known;
    // What following the blob came to: set by read_locally, on its thread.
    detail::FollowedBlob::Outcome followed = detail::FollowedBlob::Outcome::intact;
  };

  // A request whose cached blob was no answer, to be downloaded once the rest are settled.
  struct Redo {
    std::size_t index;
    bool follower_told;  // its stream's follower gave up: the download goes into a file
  };

  static Result<std::optional<std::string>> normalised_hash(const DownloadRequest& request) {
    if (!request.sha256_hex) return std::optional<std::string>();
    std::string hex = to_lower_ascii(*request.sha256_hex);
    if (!sha256_from_hex(hex)) {
      return make_error(ExitCode::usage, "the sha256 given for {} is not 64 hex digits: '{}'",
                        redact_url(request.url), printable_excerpt(hex));
    }
    return std::optional<std::string>(std::move(hex));
  }

  // Request i as it is now carried out: without its stream once a damaged cache blob was
  // streamed to it (its follower gave up; the download goes to a file for it to read instead).
  // Only settle_missed adds to m_unstreamed, while no other thread reads it.
  const DownloadRequest& request(std::size_t i) const {
    if (auto it = m_unstreamed.find(i); it != m_unstreamed.end()) return it->second;
    return m_requests[i];
  }

  // The cache's blob for request i (by its sha256, or the one last seen for its URL), if any.
  std::optional<LocalRead> cache_hit(std::size_t i, const std::optional<std::string>& hex) const {
    std::optional<std::string> known = hex ? hex : m_cache.hash_for_url(m_requests[i].url);
    if (!known) return std::nullopt;
    std::optional<fs::path> blob = m_cache.stored_blob(*known);
    if (!blob) return std::nullopt;
    return LocalRead{i, std::move(*blob), std::move(*known)};
  }

  // Request i, not answered by the cache: a duplicate of an earlier request with the same
  // `key` (its sha256, else its URL), a file:// read, or a transfer (offline, only where it may
  // reach; else it is named in `missing`).
  Status route(std::size_t i, const std::string& key, std::vector<std::string>& missing) {
    const DownloadRequest& request = this->request(i);
    if (auto [it, inserted] = m_first_for_key.emplace(key, i); !inserted) {
      m_duplicates_of.emplace(it->second, i);
      m_is_duplicate[i] = true;
      return ok();
    }
    if (detail::has_scheme(request.url, "file")) {
      m_local.push_back(LocalRead{i, {}, {}});
      return ok();
    }
    if (!detail::has_scheme(request.url, "http") && !detail::has_scheme(request.url, "https")) {
      return make_error(ExitCode::usage, "cannot download {}: only http, https and file URLs work",
                        redact_url(request.url));
    }
    if (blocked_offline(m_config, request.url)) {
      missing.push_back(fmt::format("{} ({})", default_name(request), redact_url(request.url)));
      return ok();
    }
    m_to_download.push_back(i);
    m_known_total += request.size.value_or(0);
    return ok();
  }

  Status offline_error(const std::vector<std::string>& missing) const {
    if (missing.empty()) return ok();
    return make_error(ExitCode::network, "offline, and {} file{} not in the cache {}: {}",
                      missing.size(), missing.size() == 1 ? " is" : "s are",
                      m_cache.root().string(), join(missing, ", "));
  }

  // m_local and m_to_download: the reads on threads of their own (as many at once as
  // transfers may be), beside the transfers, which run here; each reported here as it ends.
  Status settle_sorted(detail::CurlSession& session, detail::Progress& progress) {
    if (!m_to_download.empty()) VENVFIX_TRY(session.open());
    if (m_local.empty()) return m_to_download.empty() ? ok() : transfer(session, progress, {});
    std::function<void()> wake = [] {};
    if (!m_to_download.empty()) {
      wake = [multi = session.multi()] { detail::libcurl().multi_wakeup(multi); };
    }
    detail::LocalReads reads(
        m_local.size(), static_cast<std::size_t>(std::clamp(m_config.parallel, 1, 64)),
        [this](std::size_t k, const std::stop_token& stop) { return read_locally(k, stop); },
        std::move(wake));
    const auto report_reads = [&](std::vector<detail::LocalReads::Finished> finished) -> Status {
      for (detail::LocalReads::Finished& read : finished) {
        if (!read.status) return std::move(read.status).error();
        VENVFIX_TRY(settled_locally(read.k, progress));
      }
      return ok();
    };
    if (!m_to_download.empty()) {
      VENVFIX_TRY(transfer(session, progress, [&] { return report_reads(reads.take_finished()); }));
    }
    for (;;) {
      std::vector<detail::LocalReads::Finished> finished = reads.wait_for_some();
      if (finished.empty()) return ok();
      VENVFIX_TRY(report_reads(std::move(finished)));
    }
  }

  // Read k of m_local, on a thread of LocalReads: its result, or what made the blob no answer.
  // Nothing may escape the thread: what is thrown (a follower out of memory) fails the batch.
  Status read_locally(std::size_t k, const std::stop_token& stop) noexcept {
    const LocalRead& read = m_local[k];
    try {
      return read_locally_or_throw(k, stop);
    } catch (const std::exception& e) {
      return make_error(
          ExitCode::error, "cannot read {}: {}",
          read.blob.empty() ? redact_url(request(read.index).url) : read.blob.string(), e.what());
    }
  }

  Status read_locally_or_throw(std::size_t k, const std::stop_token& stop) {
    LocalRead& read = m_local[k];
    const DownloadRequest& request = this->request(read.index);
    if (read.blob.empty()) {
      VENVFIX_TRY_ASSIGN(m_results[read.index], detail::read_local_file(m_cache, request, stop));
      return ok();
    }
    using Outcome = detail::FollowedBlob::Outcome;
    const detail::FollowedBlob followed =
        detail::follow_cached_blob(m_cache, read.blob, read.known, request, stop);
    if (followed.outcome == Outcome::intact) {
      m_results[read.index] = DownloadResult{read.blob, read.known, followed.size, true};
    }
    read.followed = followed.outcome;
    return ok();
  }

  // On this thread, once read k is done: reported, or put aside to be downloaded.
  Status settled_locally(std::size_t k, detail::Progress& progress) {
    using Outcome = detail::FollowedBlob::Outcome;
    const LocalRead& read = m_local[k];
    if (read.followed != Outcome::intact) {
      m_redo.push_back({read.index, read.followed == Outcome::damaged});
      return ok();
    }
    if (!read.blob.empty()) progress.from_cache();
    return report(read.index);
  }

  // The requests whose cached blob was no answer, routed again and settled; one whose stream
  // was handed the damaged blob's bytes goes into a file this time (see request()). Each is
  // its own: none is taken for a duplicate of a request settled before.
  Status settle_missed(detail::CurlSession& session, detail::Progress& progress) {
    if (m_redo.empty()) return ok();
    m_local.clear();
    m_to_download.clear();
    std::vector<std::string> missing;
    for (const Redo& redo : std::exchange(m_redo, {})) {
      if (redo.follower_told && m_requests[redo.index].stream) {
        DownloadRequest unstreamed = m_requests[redo.index];
        unstreamed.stream.reset();
        m_unstreamed.emplace(redo.index, std::move(unstreamed));
      }
      VENVFIX_TRY(route(redo.index, fmt::format("missed cache entry {}", redo.index), missing));
    }
    VENVFIX_TRY(offline_error(missing));
    return settle_sorted(session, progress);
  }

  // Reports request `index` (whose result is set) and then each request that duplicates it.
  Status report(std::size_t index) {
    if (m_on_done) VENVFIX_TRY(m_on_done(index, *m_results[index]));
    auto [first, last] = m_duplicates_of.equal_range(index);
    for (auto it = first; it != last; ++it) {
      const std::size_t dup = it->second;
      m_results[dup] = m_results[index];
      const auto& expected = m_requests[dup].sha256_hex;
      if (expected && to_lower_ascii(*expected) != m_results[dup]->sha256_hex) {
        return make_error(ExitCode::network, "the sha256 of {} is {}, but {} was expected",
                          redact_url(m_requests[dup].url), m_results[dup]->sha256_hex,
                          to_lower_ascii(*expected));
      }
      if (m_on_done) VENVFIX_TRY(m_on_done(dup, *m_results[dup]));
    }
    return ok();
  }

  Status transfer(const detail::CurlSession& session, detail::Progress& progress,
                  const detail::TransferLoop::BetweenPolls& between_polls) {
    std::vector<std::unique_ptr<Transfer>> owned;
    std::vector<Transfer*> transfers;
    std::vector<std::string> names;
    for (std::size_t index : m_to_download) {
      const DownloadRequest& request = this->request(index);
      if (request.stream) {
        owned.push_back(std::make_unique<Transfer>(request.url, *request.stream));
      } else {
        VENVFIX_TRY_ASSIGN(CacheTempFile file, m_cache.create_temp());
        owned.push_back(std::make_unique<Transfer>(request.url, std::move(file)));
        owned.back()->on_stored(request.on_stored);
      }
      transfers.push_back(owned.back().get());
      names.push_back(default_name(m_requests[index]));
    }
    detail::TransferLoop loop(m_config, session.multi(), session.share(), &progress, "download");
    return loop.run(
        transfers, names, "",
        [&](std::size_t id, Transfer& done) -> Status {
          std::size_t index = m_to_download[id];
          VENVFIX_TRY_ASSIGN(m_results[index], finish_download(m_cache, request(index), done));
          return report(index);
        },
        between_polls);
  }

  const FetchConfig& m_config;
  const DownloadCache& m_cache;
  std::span<const DownloadRequest> m_requests;
  const Downloader::OnDownloaded& m_on_done;
  std::vector<std::optional<DownloadResult>> m_results;
  std::vector<bool> m_is_duplicate;
  std::map<std::string, std::size_t> m_first_for_key;       // sha256 or URL → first request
  std::multimap<std::size_t, std::size_t> m_duplicates_of;  // first request → its duplicates
  std::map<std::size_t, DownloadRequest> m_unstreamed;      // see request()
  std::vector<LocalRead> m_local;
  std::vector<std::size_t> m_to_download;
  std::vector<Redo> m_redo;  // requests whose cached blob was no answer
  std::uint64_t m_known_total = 0;
};

}  // namespace

Result<std::vector<DownloadResult>> Downloader::download_each(
    std::span<const DownloadRequest> requests, const OnDownloaded& on_done) {
  if (m_impl->cache.root().empty() && !requests.empty()) {
    return make_error(ExitCode::usage, "no download cache directory is configured (--cache-dir)");
  }
  DownloadBatch batch(m_impl->config, m_impl->cache, requests, on_done);
  VENVFIX_TRY(batch.sort());
  VENVFIX_TRY(batch.settle(m_impl->session));
  return std::move(batch).results();
}

Result<TextResponse> Downloader::get(const std::string& url,
                                     const std::vector<std::string>& accept_headers,
                                     std::uint64_t max_bytes) {
  if (detail::has_scheme(url, "file")) return detail::read_local_text(url, max_bytes);
  if (!detail::has_scheme(url, "http") && !detail::has_scheme(url, "https")) {
    return make_error(ExitCode::usage, "cannot fetch {}: only http, https and file URLs work",
                      redact_url(url));
  }
  if (blocked_offline(m_impl->config, url)) {
    return make_error(ExitCode::network, "offline: not fetching {}", redact_url(url));
  }
  return http_get(url, join(accept_headers, ", "), {}, max_bytes);
}

Result<TextResponse> Downloader::http_get(const std::string& url, const std::string& accept,
                                          const std::vector<std::string>& request_headers,
                                          std::uint64_t max_bytes) {
  VENVFIX_TRY(m_impl->session.open());
  Transfer transfer(url, max_bytes);
  for (const std::string& line : request_headers) transfer.add_request_header(line);
  TextResponse response;
  detail::TransferLoop loop(m_impl->config, m_impl->session.multi(), m_impl->session.share(),
                            nullptr, "fetch");
  VENVFIX_TRY(loop.run({&transfer}, {url}, accept, [&](std::size_t, Transfer& done) -> Status {
    response.status = done.status();
    response.body = std::move(done.body());
    response.effective_url = done.effective_url();
    response.content_type = done.content_type();
    response.cache_headers = done.cache_headers();
    return ok();
  }));
  return response;
}

Result<std::string> Downloader::fetch_text(const std::string& url,
                                           const std::vector<std::string>& accept_headers) {
  VENVFIX_TRY_ASSIGN(TextResponse response, get(url, accept_headers));
  if (response.status < 200 || response.status > 299) {
    return make_error(ExitCode::network, "cannot fetch {}: {}", redact_url(url),
                      detail::describe_status(response.status));
  }
  return std::move(response.body);
}

}  // namespace venvfix::fetch
