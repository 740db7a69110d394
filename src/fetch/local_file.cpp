#include "local_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <stop_token>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "venvfix/base/log.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::fetch::detail {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<fs::path> local_path(std::string_view url) {
  std::string_view rest = url;
  if (!to_lower_ascii(rest.substr(0, 7)).starts_with("file://")) {
    return make_error(ExitCode::usage, "{} is not a file:// URL", redact_url(url));
  }
  rest.remove_prefix(7);
  if (to_lower_ascii(rest.substr(0, 9)) == "localhost") rest.remove_prefix(9);
  rest = rest.substr(0, rest.find_first_of("?#"));
  if (rest.empty() || rest.front() != '/') {
    return make_error(ExitCode::usage, "{} is not a local absolute file:// URL", redact_url(url));
  }
  std::string path;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && hex_digit(rest[i + 1]) >= 0 &&
        hex_digit(rest[i + 2]) >= 0) {
      path.push_back(static_cast<char>(hex_digit(rest[i + 1]) * 16 + hex_digit(rest[i + 2])));
      i += 2;
    } else {
      path.push_back(rest[i]);
    }
  }
  if (path.find('\0') != std::string::npos) {
    return make_error(ExitCode::usage, "{} is not a usable file:// URL", redact_url(url));
  }
  return fs::path(path);
}

namespace {

Error stopped_reading(const fs::path& source) {
  return make_error(ExitCode::error, "reading {} was stopped", source.string());
}

// Hands `bytes` to the stream, waiting while it has no room for them, as a paused transfer waits
// (offered again once can_take says they fit, looked at every millisecond), unless stopped.
Status write_to_stream(const BodyStream& stream, std::span<const std::byte> bytes,
                       const fs::path& source, const std::stop_token& stop) {
  while (!stream.write(bytes)) {
    while (!stream.can_take(bytes.size())) {
      if (stop.stop_requested()) return stopped_reading(source);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return ok();
}

Status check_against_request(const DownloadRequest& request, const fs::path& source,
                             const std::string& actual, std::uint64_t size) {
  if (request.sha256_hex && to_lower_ascii(*request.sha256_hex) != actual) {
    return make_error(ExitCode::network, "the sha256 of {} is {}, but {} was expected",
                      source.string(), actual, to_lower_ascii(*request.sha256_hex));
  }
  if (request.size && *request.size != size) {
    return make_error(ExitCode::network, "{} has {} bytes, but {} were expected", source.string(),
                      size, *request.size);
  }
  return ok();
}

// Reads `fd` (the file `source`) from its start in 1 MiB pieces, handing each to `each`.
Status for_each_piece(int fd, const fs::path& source, const std::stop_token& stop,
                      const std::function<Status(std::span<const std::byte>)>& each) {
  std::vector<std::byte> buffer(1u << 20);
  for (;;) {
    if (stop.stop_requested()) return stopped_reading(source);
    const ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return make_error(ExitCode::network, "cannot read {}: {}", source.string(),
                        errno_message(errno));
    }
    if (got == 0) return ok();
    VENVFIX_TRY(each(std::span<const std::byte>(buffer.data(), static_cast<std::size_t>(got))));
  }
}

Result<Fd> open_to_read(const fs::path& source) {
  Fd input(::open(source.c_str(), O_RDONLY | O_CLOEXEC));
  if (!input.valid()) {
    return make_error(ExitCode::network, "cannot read {}: {}", source.string(),
                      errno_message(errno));
  }
  return input;
}

}  // namespace

Result<DownloadResult> read_local_file(const DownloadCache& cache, const DownloadRequest& request,
                                       const std::stop_token& stop) {
  VENVFIX_TRY_ASSIGN(fs::path source, local_path(request.url));
  VENVFIX_TRY_ASSIGN(Fd input, open_to_read(source));
  std::optional<CacheTempFile> file;  // none when streamed
  if (!request.stream) {
    VENVFIX_TRY_ASSIGN(CacheTempFile created, cache.create_temp());
    file.emplace(std::move(created));
  }
  Sha256 hasher;
  std::uint64_t size = 0;
  const Status read =
      for_each_piece(input.get(), source, stop, [&](std::span<const std::byte> piece) {
        hasher.update(piece);
        size += piece.size();
        if (request.stream) return write_to_stream(*request.stream, piece, source, stop);
        Status written = write_all(file->fd(), piece, file->path().string());
        if (written && request.on_stored) request.on_stored(file->fd(), size);
        return written;
      });
  if (!read) return read.error();
  const std::string actual = to_hex(hasher.finish());
  VENVFIX_TRY(check_against_request(request, source, actual, size));
  if (request.stream) return DownloadResult{{}, actual, size, false, true};
  VENVFIX_TRY_ASSIGN(fs::path path, cache.commit(std::move(*file), actual));
  return DownloadResult{std::move(path), actual, size, false};
}

namespace {

// Hashes the open blob from its start, handing each piece to the request's stream if it has
// one; the blob's digest, or the error that stopped the read.
Result<std::string> hash_blob(int fd, const fs::path& blob, const DownloadRequest& request,
                              const std::stop_token& stop) {
  Sha256 hasher;
  VENVFIX_TRY(for_each_piece(fd, blob, stop, [&](std::span<const std::byte> piece) -> Status {
    hasher.update(piece);
    return request.stream ? write_to_stream(*request.stream, piece, blob, stop) : ok();
  }));
  return to_hex(hasher.finish());
}

}  // namespace

FollowedBlob follow_cached_blob(const DownloadCache& cache, const fs::path& blob,
                                std::string_view sha256_hex, const DownloadRequest& request,
                                const std::stop_token& stop) {
  using Outcome = FollowedBlob::Outcome;
  Fd input(::open(blob.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat status {};
  if (!input.valid() || ::fstat(input.get(), &status) != 0) {
    const int error = errno;  // before the message's allocations
    spdlog::warn("the cached file {} cannot be read ({}); downloading it again", blob.string(),
                 errno_message(error));
    return {Outcome::unopened};
  }
  const auto size = static_cast<std::uint64_t>(status.st_size);
  const bool told_stored = request.on_stored && !request.stream;  // a stream gets the bytes
  if (told_stored) request.on_stored(input.get(), size);
  const Result<std::string> digest = hash_blob(input.get(), blob, request, stop);
  if (digest && *digest == to_lower_ascii(sha256_hex)) return {Outcome::intact, size};
  if (stop.stop_requested()) return {Outcome::stopped};  // the batch failed: it may be intact
  // What the follower has is void: it is told so as a download's follower is when the
  // download starts over.
  if (request.stream) request.stream->restart();
  if (told_stored) request.on_stored(input.get(), 0);
  cache.remove_damaged(
      blob, digest ? "does not match its sha256" : "cannot be read: " + digest.error().message);
  return {Outcome::damaged};
}

Result<TextResponse> read_local_text(std::string_view url, std::uint64_t max_bytes) {
  VENVFIX_TRY_ASSIGN(fs::path path, local_path(url));
  TextResponse response;
  response.effective_url = std::string(url);
  std::error_code error;
  if (!fs::exists(path, error)) {
    response.status = 404;
    return response;
  }
  Result<std::string> text = read_file(path, static_cast<std::size_t>(max_bytes));
  if (!text) return Error{ExitCode::network, text.error().message};
  response.status = 200;
  response.body = std::move(*text);
  return response;
}

}  // namespace venvfix::fetch::detail
