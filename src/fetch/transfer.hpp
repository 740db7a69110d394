// One download (or page fetch) across its attempts: the curl easy handle of the current
// attempt, where the body goes (a cache temporary file hashed as it is written, or memory),
// and what the last response said (status, Retry-After, validators for resuming).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "curl_support.hpp"
#include "stream_hasher.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/fetch/cache.hpp"
#include "venvfix/fetch/downloader.hpp"
#include "venvfix/fetch/page_cache.hpp"

namespace venvfix::fetch::detail {

using Clock = std::chrono::steady_clock;

class Transfer {
 public:
  // A download into `file`, hashed while written.
  Transfer(std::string url, CacheTempFile file);
  // A download handed to `stream` as it arrives, hashed on the way (no file).
  Transfer(std::string url, BodyStream stream);
  // A page fetch into memory, up to `max_bytes`.
  Transfer(std::string url, std::uint64_t max_bytes);
  Transfer(Transfer&&) = delete;
  Transfer& operator=(Transfer&&) = delete;
  ~Transfer() = default;

  // Creates the easy handle for the next attempt: resumes with Range (and If-Range) when the
  // previous response allowed it and bytes are already stored.
  CURL* start_attempt(const FetchConfig& config, CURLSH* share, const std::string& accept);
  // Frees the current attempt's handle (after curl_multi_remove_handle).
  void end_attempt();
  CURL* easy() const { return m_easy.get(); }

  // Told how far the file is after each store, and 0 when it is truncated for a restart.
  void on_stored(std::function<void(int, std::uint64_t)> watcher) {
    m_on_stored = std::move(watcher);
  }

  // A request header for every attempt ("If-None-Match: \"abc\"").
  void add_request_header(std::string line) { m_request_headers.push_back(std::move(line)); }

  // A stream that had no room for the last bytes paused the transfer (CURL_WRITEFUNC_PAUSE):
  // resume() unpauses it, which offers those bytes again at once (and may pause it again).
  bool paused() const { return m_paused; }
  // Unpauses a paused transfer whose stream now has room for the bytes it refused.
  void resume_if_room();

  // Drops stored bytes so that the next attempt starts from the beginning.
  Status restart();

  const std::string& url() const { return m_url; }
  long status() const { return m_status; }
  std::optional<double> retry_after() const { return m_retry_after; }
  bool range_mismatch() const { return m_range_mismatch; }
  const std::optional<Error>& local_error() const { return m_local_error; }
  std::uint64_t bytes() const { return m_written; }
  std::optional<std::uint64_t> expected_total() const { return m_expected_total; }
  const char* error_buffer() const { return m_error_buffer; }
  const std::string& content_type() const { return m_content_type; }
  // What the final response said about caching it.
  const CacheHeaders& cache_headers() const { return m_cache_headers; }
  // For memory transfers: the body (for others, the first bytes of an error response).
  std::string& body() { return m_body; }
  std::string effective_url() const;

  // The sha256 of what was stored (waits for the hashing thread to catch up).
  Result<std::string> finish_hash();
  CacheTempFile take_file() { return std::move(*m_file); }

  int attempt = 0;  // attempts made so far
  Clock::time_point not_before{};
  std::string last_failure;  // why the latest attempt failed, for the final message

 private:
  // curl's callbacks: nothing thrown may cross curl's C frames; what is thrown (a stream out
  // of memory) ends the attempt with an error naming the URL (local_error).
  static std::size_t on_header(char* data, std::size_t size, std::size_t count,
                               void* self) noexcept;
  static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* self) noexcept;
  void failed_in_callback(const char* what) noexcept;
  void header_line(std::string_view line);
  std::size_t body(char* data, std::size_t length);
  bool first_body_bytes();
  bool store(const char* data, std::size_t size);

  std::string m_url;
  std::vector<std::string> m_request_headers;
  std::optional<CacheTempFile> m_file;
  std::optional<BodyStream> m_stream;
  Sha256 m_stream_sha;  // a stream's bytes, hashed on the downloading thread as they pass
  std::uint64_t m_max_bytes = 0;
  // Downloads: hashed on another thread as the file grows. Pages: not hashed.
  std::unique_ptr<StreamHasher> m_hasher;
  std::function<void(int, std::uint64_t)> m_on_stored;
  std::uint64_t m_written = 0;  // body bytes stored (and hashed) so far
  bool m_paused = false;
  std::size_t m_refused = 0;   // how many bytes the stream refused when it paused
  std::uint64_t m_synced = 0;  // bytes handed to write-back early
  std::uint64_t m_resume_from = 0;
  bool m_resumable = false;  // the response that stored bytes accepted ranges
  std::string m_validator;   // ETag or Last-Modified of that response, for If-Range

  EasyHandle m_easy;
  HeaderList m_headers;
  char m_error_buffer[CURL_ERROR_SIZE] = {};

  // Per response (reset at every status line, so redirects do not leak into the final one).
  long m_status = 0;
  std::optional<double> m_retry_after;
  std::optional<std::uint64_t> m_range_start;
  std::optional<std::uint64_t> m_expected_total;
  std::string m_content_type;
  CacheHeaders m_cache_headers;
  std::string m_etag;
  std::string m_last_modified;
  bool m_accept_ranges = false;
  bool m_body_started = false;
  bool m_keep_body = false;
  bool m_range_mismatch = false;
  std::optional<Error> m_local_error;
  std::string m_body;
};

}  // namespace venvfix::fetch::detail
