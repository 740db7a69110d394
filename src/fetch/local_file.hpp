// file:// URLs (find-links directories, air-gapped indexes): read without curl, so that a
// redirect can never reach them and errors name the path.
#pragma once

#include <cstdint>
#include <optional>
#include <stop_token>
#include <string_view>

#include "venvfix/base/result.hpp"
#include "venvfix/fetch/cache.hpp"
#include "venvfix/fetch/downloader.hpp"

namespace venvfix::fetch::detail {

// "file:///a/b%20c" or "file://localhost/a" → "/a/b c"; an Error for anything else.
Result<fs::path> local_path(std::string_view url);

// Reads the file as a download reads its body: hashed on the way and checked against the
// request's sha256 and size, and copied into the cache (telling request.on_stored after every
// piece) or, with request.stream, handed to the stream piece by piece and written nowhere. What
// the caller gets is the copy or the bytes that were hashed, never the original file, so later
// changes to the original cannot slip past the hash check.
// Stops early (an Error) once `stop` is requested.
Result<DownloadResult> read_local_file(const DownloadCache& cache, const DownloadRequest& request,
                                       const std::stop_token& stop = std::stop_token());

// What following a cached blob came to.
struct FollowedBlob {
  enum class Outcome {
    intact,    // the bytes the sha256 names, `size` of them
    unopened,  // the blob could not be opened (permissions, no descriptor left): nothing was
               // handed on and the blob is left; the request is downloaded as it was
    damaged,   // other bytes, or a read that failed midway: the follower was told to drop what
               // it had and the blob was removed; the request is downloaded into a file
    stopped,   // `stop` was requested: the blob is left, the outcome no longer matters
  };
  Outcome outcome = Outcome::stopped;
  std::uint64_t size = 0;
};

// A cache hit read as a download's body is read, so that a caller working on a wheel while it
// arrives works the same way on a cached one, and the blob is read once: hashed as its bytes
// are handed to request.stream piece by piece, or after request.on_stored was told that `blob`
// holds all its bytes (the follower reads them while they are hashed). When the bytes are not
// the ones `sha256_hex` names, the follower is told to drop what it had (the stream restarted,
// on_stored told 0 bytes) and the blob is removed. A blob that cannot be opened is warned
// about and left: that says nothing about its bytes (it may be another user's, or the
// process out of descriptors), and a download replaces it where the cache may be written.
FollowedBlob follow_cached_blob(const DownloadCache& cache, const fs::path& blob,
                                std::string_view sha256_hex, const DownloadRequest& request,
                                const std::stop_token& stop = std::stop_token());

// Reads a local file: status 200, or 404 when it does not exist.
Result<TextResponse> read_local_text(std::string_view url, std::uint64_t max_bytes);

}  // namespace venvfix::fetch::detail
