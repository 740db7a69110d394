#include "transfer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "venvfix/base/log.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::fetch::detail {

namespace {

constexpr std::size_t k_error_body_excerpt = 512;
// Start write-back every so many bytes so the final fsync has little left to do.
constexpr std::uint64_t k_writeback_chunk = 32u << 20;

std::optional<std::uint64_t> parse_u64(std::string_view text) {
  text = trim(text);
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

Transfer::Transfer(std::string url, CacheTempFile file)
    : m_url(std::move(url)), m_file(std::move(file)) {}

Transfer::Transfer(std::string url, BodyStream stream)
    : m_url(std::move(url)), m_stream(std::move(stream)) {}

Result<std::string> Transfer::finish_hash() {
  if (m_stream) return to_hex(m_stream_sha.finish());
  if (!m_hasher) return to_hex(sha256(""));
  return m_hasher->finish(m_written);
}

Transfer::Transfer(std::string url, std::uint64_t max_bytes)
    : m_url(std::move(url)), m_max_bytes(max_bytes) {}

CURL* Transfer::start_attempt(const FetchConfig& config, CURLSH* share, const std::string& accept) {
  m_easy.reset(libcurl().easy_init());
  m_headers.reset();
  m_error_buffer[0] = '\0';
  m_status = 0;
  m_local_error.reset();
  m_range_mismatch = false;
  m_body_started = false;
  CURL* easy = m_easy.get();
  set_common_options(easy, config, share, m_url);
  libcurl().easy_setopt(easy, CURLOPT_URL, m_url.c_str());
  libcurl().easy_setopt(easy, CURLOPT_ERRORBUFFER, m_error_buffer);
  libcurl().easy_setopt(easy, CURLOPT_HEADERFUNCTION, &Transfer::on_header);
  libcurl().easy_setopt(easy, CURLOPT_HEADERDATA, this);
  libcurl().easy_setopt(easy, CURLOPT_WRITEFUNCTION, &Transfer::on_body);
  libcurl().easy_setopt(easy, CURLOPT_WRITEDATA, this);
  curl_slist* headers = nullptr;
  if (!accept.empty()) headers = libcurl().slist_append(headers, ("Accept: " + accept).c_str());
  for (const std::string& line : m_request_headers)
    headers = libcurl().slist_append(headers, line.c_str());
  if (m_file || m_stream) {
    // The hashing thread starts with the first attempt (not for every queued download).
    if (m_file && !m_hasher) m_hasher = std::make_unique<StreamHasher>(m_file->fd());
    // Wheels are stored as served: no transfer decoding that could change the hashed bytes.
    libcurl().easy_setopt(easy, CURLOPT_BUFFERSIZE, 512L * 1024L);
    m_resume_from = (m_resumable && m_written > 0) ? m_written : 0;
    if (m_resume_from > 0) {
      std::string range = std::to_string(m_resume_from) + "-";
      libcurl().easy_setopt(easy, CURLOPT_RANGE, range.c_str());  // copied by curl
      if (!m_validator.empty()) {
        headers = libcurl().slist_append(headers, ("If-Range: " + m_validator).c_str());
      }
    }
  } else {
    libcurl().easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");  // pages compress well
    m_body.clear();
    m_written = 0;
    m_resume_from = 0;
  }
  m_headers.reset(headers);
  if (headers != nullptr) libcurl().easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  ++attempt;
  return easy;
}

void Transfer::resume_if_room() {
  if (!m_paused || !m_stream || !m_stream->can_take(m_refused)) return;
  m_paused = false;
  libcurl().easy_pause(m_easy.get(), CURLPAUSE_CONT);  // offers the bytes again: may pause again
}

void Transfer::end_attempt() {
  m_paused = false;
  m_easy.reset();
  m_headers.reset();
}

Status Transfer::restart() {
  m_written = 0;
  m_synced = 0;
  m_resumable = false;
  m_validator.clear();
  m_body.clear();
  if (m_hasher) m_hasher->reset();
  if (m_stream) {
    m_stream_sha.finish();  // resets it
    m_stream->restart();
    return ok();
  }
  if (!m_file) return ok();
  Status truncated = m_file->truncate();
  if (m_on_stored) m_on_stored(m_file->fd(), 0);
  return truncated;
}

std::string Transfer::effective_url() const {
  char* url = nullptr;
  if (m_easy && libcurl().easy_getinfo(m_easy.get(), CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK &&
      url != nullptr) {
    return url;
  }
  return m_url;
}

std::size_t Transfer::on_header(char* data, std::size_t size, std::size_t count,
                                void* self) noexcept {
  auto* transfer = static_cast<Transfer*>(self);
  try {
    transfer->header_line(std::string_view(data, size * count));
  } catch (const std::exception& e) {
    transfer->failed_in_callback(e.what());
    return 0;  // aborts the attempt (CURLE_WRITE_ERROR)
  }
  return size * count;
}

void Transfer::failed_in_callback(const char* what) noexcept {
  try {
    m_local_error =
        make_error(ExitCode::error, "cannot take the response of {}: {}", redact_url(m_url), what);
  } catch (...) {  // out of memory even for the message: the attempt still ends, unexplained
  }
}

void Transfer::header_line(std::string_view line) {
  line = trim(line);
  if (line.starts_with("HTTP/")) {
    // A new response (the first, or the next after a redirect or 100 Continue).
    m_status = 0;
    std::size_t space = line.find(' ');
    if (space != std::string_view::npos) {
      m_status = static_cast<long>(parse_u64(line.substr(space + 1, 3)).value_or(0));
    }
    m_retry_after.reset();
    m_range_start.reset();
    m_expected_total.reset();
    m_content_type.clear();
    m_cache_headers = CacheHeaders{};
    m_etag.clear();
    m_last_modified.clear();
    m_accept_ranges = false;
    return;
  }
  std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return;
  std::string name = to_lower_ascii(trim(line.substr(0, colon)));
  std::string_view value = trim(line.substr(colon + 1));
  if (name == "retry-after") {
    m_retry_after = parse_retry_after(value, std::chrono::system_clock::now());
  } else if (name == "content-length") {
    if (!m_range_start) m_expected_total = parse_u64(value);
  } else if (name == "content-range") {
    // "bytes <first>-<last>/<total>"
    if (value.starts_with("bytes ")) {
      std::string_view spec = value.substr(6);
      std::size_t dash = spec.find('-');
      std::size_t slash = spec.find('/');
      if (dash != std::string_view::npos) m_range_start = parse_u64(spec.substr(0, dash));
      if (slash != std::string_view::npos) m_expected_total = parse_u64(spec.substr(slash + 1));
    }
  } else if (name == "content-type") {
    m_content_type = std::string(value);
  } else if (name == "etag") {
    m_etag = std::string(value);
    m_cache_headers.etag = m_etag;
  } else if (name == "last-modified") {
    m_last_modified = std::string(value);
    m_cache_headers.last_modified = m_last_modified;
  } else if (name == "cache-control") {
    std::string& list = m_cache_headers.cache_control;  // several lines are one list
    list += (list.empty() ? "" : ", ") + std::string(value);
  } else if (name == "expires") {
    m_cache_headers.expires = std::string(value);
  } else if (name == "date") {
    m_cache_headers.date = std::string(value);
  } else if (name == "age") {
    m_cache_headers.age = std::string(value);
  } else if (name == "accept-ranges") {
    m_accept_ranges = to_lower_ascii(value) == "bytes";
  }
}

std::size_t Transfer::on_body(char* data, std::size_t size, std::size_t count,
                              void* self) noexcept {
  auto* transfer = static_cast<Transfer*>(self);
  try {
    return transfer->body(data, size * count);
  } catch (const std::exception& e) {
    transfer->failed_in_callback(e.what());
    return 0;  // aborts the attempt (CURLE_WRITE_ERROR)
  }
}

std::size_t Transfer::body(char* data, std::size_t length) {
  if (!m_body_started) {
    m_body_started = true;
    if (!first_body_bytes()) return 0;  // aborts the attempt (CURLE_WRITE_ERROR)
  }
  if (!m_keep_body) {
    // An error response: keep an excerpt for the message, drop the rest.
    std::size_t room = k_error_body_excerpt - std::min(k_error_body_excerpt, m_body.size());
    m_body.append(data, std::min(room, length));
    return length;
  }
  if (m_stream) {
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), length);
    if (!m_stream->write(bytes)) {
      m_paused = true;
      m_refused = length;
      return CURL_WRITEFUNC_PAUSE;
    }
    m_stream_sha.update(bytes);
    m_written += length;
    return length;
  }
  return store(data, length) ? length : 0;
}

// Decides, once per response, what its body is: the file's bytes from the start (200), the
// continuation of the stored bytes (206 at the right offset), or an error page to discard.
bool Transfer::first_body_bytes() {
  m_keep_body = m_status == 200 || m_status == 206 || (m_status == 0 && !m_file && !m_stream);
  if (!m_keep_body) {
    m_body.clear();
    return true;
  }
  if (m_status == 206) {
    if (!m_range_start || *m_range_start != m_resume_from || m_resume_from != m_written) {
      m_range_mismatch = true;  // the server answered another range: start over
      return false;
    }
    if (m_expected_total && *m_expected_total < m_written) {
      m_range_mismatch = true;
      return false;
    }
  } else if (m_written > 0) {
    // A full body although bytes are stored (the server ignored Range, or If-Range said the
    // file changed): start from the beginning.
    if (!restart()) {
      m_local_error =
          make_error(ExitCode::error, "cannot restart the download of {}", redact_url(m_url));
      return false;
    }
  }
  m_resumable = m_accept_ranges || m_status == 206;
  if (m_status == 200) m_validator = !m_etag.empty() ? m_etag : m_last_modified;
  return true;
}

bool Transfer::store(const char* data, std::size_t size) {
  if (!m_file) {
    if (m_body.size() + size > m_max_bytes) {
      m_local_error = make_error(ExitCode::network, "{} is larger than {} bytes", redact_url(m_url),
                                 m_max_bytes);
      return false;
    }
    m_body.append(data, size);
    m_written += size;
    return true;
  }
  std::size_t done = 0;
  while (done < size) {
    ssize_t written = ::write(m_file->fd(), data + done, size - done);
    if (written < 0) {
      if (errno == EINTR) continue;
      m_local_error = make_error(ExitCode::error, "cannot write {} (downloading {}): {}",
                                 m_file->path().string(), redact_url(m_url), errno_message(errno));
      return false;
    }
    done += static_cast<std::size_t>(written);
  }
  m_written += size;
  m_hasher->advance(m_written);
  if (m_on_stored) m_on_stored(m_file->fd(), m_written);
  if (m_written - m_synced >= k_writeback_chunk) {
    ::sync_file_range(m_file->fd(), static_cast<off_t>(m_synced),
                      static_cast<off_t>(m_written - m_synced), SYNC_FILE_RANGE_WRITE);
    m_synced = m_written;
  }
  return true;
}

}  // namespace venvfix::fetch::detail
