// Downloads over HTTP(S) with libcurl's multi interface: many transfers at once (HTTP/2
// multiplexing where offered, connection reuse otherwise), retries with exponential back-off
// and jitter on connection errors, timeouts, 429 and 5xx (honouring Retry-After), resume with
// Range after a broken transfer, and the sha256 computed while the bytes stream in.
//
// Credentials come from the URL's user-info or from netrc and are used for requests only:
// every message and log line shows URLs through redact_url. TLS certificates are always
// verified (FetchConfig::ca_cert replaces the trusted CA bundle). Proxies come from the usual
// environment variables (http_proxy, https_proxy, no_proxy), as libcurl reads them.
//
// Failure contract: every error has ExitCode::network and names the (redacted) URL; after a
// failure no partial file remains in the cache.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/fetch/config.hpp"
#include "venvfix/fetch/page_cache.hpp"

namespace venvfix::fetch {

namespace fs = std::filesystem;

// Where a download's body goes instead of the cache (DownloadRequest::stream): the bytes are
// hashed and checked against the request as always, but no file is written and nothing enters
// the cache. apply streams a wheel straight into the members it unpacks when its unpacked-wheel
// cache keeps the installed form.
struct BodyStream {
  // The body's next bytes, in order, on one thread at a time (curl's, or for a cache hit or a
  // file:// URL read while transfers run, the thread reading it): takes all of them and returns
  // true, or takes none and returns false while it has no room for them. The transfer then
  // pauses (the others go on) and offers the same bytes again once can_take says they fit.
  std::function<bool(std::span<const std::byte>)> write;
  // Whether write() would now take this many bytes: a paused transfer is offered its bytes
  // again only then (curl would otherwise copy them back and forth while the reader catches up).
  std::function<bool(std::size_t)> can_take;
  // The bytes written so far are void: the download starts over from its first byte.
  std::function<void()> restart;
};

struct DownloadRequest {
  std::string url;  // http(s):// or file://; may carry user-info
  // Checked when given (a mismatch is an error naming the URL and both digests); without it
  // the computed digest names the blob.
  std::optional<std::string> sha256_hex;
  std::optional<std::uint64_t> size;  // for progress, and checked when given
  std::string display_name;           // for progress lines; default: the URL's file name
  // Called on the downloading thread each time body bytes are stored: the file `fd` (readable
  // with pread while the call lasts; duplicate it to keep it) now holds bytes [0, stored) of
  // this download; a smaller `stored` than before means the stored bytes were dropped (the
  // download starts over). For a file:// URL, `fd` is its copy growing in the cache; for a
  // cache hit, the blob, told once with its whole size. Lets a caller work on a file while it
  // arrives (apply unpacks a wheel's members as they come).
  std::function<void(int fd, std::uint64_t stored)> on_stored;
  // With a stream, a download's body goes there instead of into a file (on_stored is not
  // called); its result has an empty path and `streamed` set. A file:// URL's bytes are read,
  // hashed and streamed as a download's are (a find-links wheelhouse). A request the cache
  // already holds is answered from the cache (path set, `streamed` not), its blob's bytes
  // streamed too and hashed on the way; if they are not the bytes named, the stream is
  // restarted, the blob removed, and the request downloaded into a file in the cache instead.
  std::optional<BodyStream> stream;
};

struct DownloadResult {
  fs::path path;  // the blob in the content-addressed cache (read-only use)
  std::string sha256_hex;
  std::uint64_t size = 0;
  bool from_cache = false;
  bool streamed = false;  // the body went to DownloadRequest::stream: `path` is empty
};

// A page or other small document fetched into memory.
struct TextResponse {
  long status = 0;  // HTTP status (200 for file://); never 304 from get_page
  std::string body;
  std::string effective_url;  // after redirects (keeps the request's user-info; from the page
                              // cache: without user-info)
  std::string content_type;
  CacheHeaders cache_headers;  // what the (last) response said about caching
  // get_page: served from the page cache, without a request (fresh, or offline) or after a 304.
  enum class Source { network, cache, revalidated } source = Source::network;
};

class Downloader {
 public:
  explicit Downloader(const FetchConfig& config);
  ~Downloader();
  Downloader(const Downloader&) = delete;
  Downloader& operator=(const Downloader&) = delete;

  // Downloads every request into the cache (cache hits download nothing) and returns the
  // results in request order. Stops at the first failure: transfers in flight are abandoned
  // and their temporary files removed. Offline, a request the cache cannot answer is an error
  // that lists every missing file.
  Result<std::vector<DownloadResult>> download_all(std::span<const DownloadRequest> requests);

  // Called once for each request as soon as its file is in the cache and checked, so that the
  // caller can start on it (stage wheel k) while the others still download. `request` is the
  // position in the span. Calls come from the thread that called download_each, each as soon as
  // its request is settled: cache hits and file:// reads are read on a thread of their own while
  // the transfers run (in request order among themselves; without transfers, on the caller's
  // thread), so they and the downloads are reported as each ends; a request that duplicates
  // another is reported right after it. A cache hit whose blob turns out damaged is downloaded
  // after the rest and reported then. An Error returned stops everything like a
  // failed download (transfers abandoned, temporary files removed). The transfers wait while it
  // runs: hand long work to another thread.
  using OnDownloaded = std::function<Status(std::size_t request, const DownloadResult& result)>;
  // download_all, reporting each request to `on_done` as it completes.
  Result<std::vector<DownloadResult>> download_each(std::span<const DownloadRequest> requests,
                                                    const OnDownloaded& on_done);

  // GETs `url` into memory with the given Accept header values, following redirects, retrying
  // like downloads. Any HTTP status is returned (the caller decides what a 404 means) once
  // retries of 429/5xx are exhausted; transport failures are errors. file:// URLs read the file.
  // Bodies above `max_bytes` are an error.
  Result<TextResponse> get(const std::string& url, const std::vector<std::string>& accept_headers,
                           std::uint64_t max_bytes = 256u << 20);
  // get() through the page cache (venvfix/fetch/page_cache.hpp) for http(s) URLs when a cache
  // directory is configured: a fresh entry answers without a request, a stale one is
  // revalidated (a 304 answers from the cache), 200/404/410 answers are stored unless
  // `no-store`. Offline, a cached entry answers whatever its age and a missing one is an
  // ExitCode::network error naming the URL. Other URLs: get().
  Result<TextResponse> get_page(const std::string& url,
                                const std::vector<std::string>& accept_headers,
                                std::uint64_t max_bytes = 256u << 20);
  // get() that requires a 2xx status and returns the body.
  Result<std::string> fetch_text(const std::string& url,
                                 const std::vector<std::string>& accept_headers);

  const FetchConfig& config() const;

 private:
  // GETs an http(s) URL with these extra request header lines.
  Result<TextResponse> http_get(const std::string& url, const std::string& accept,
                                const std::vector<std::string>& request_headers,
                                std::uint64_t max_bytes);

  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace venvfix::fetch
