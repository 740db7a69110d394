// file:// URLs (find-links directories, air-gapped indexes): read without curl, so that a
// redirect can never reach them and errors name the path.
#pragma once

#include <cstdint>
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
Result<DownloadResult> read_local_file(const DownloadCache& cache, const DownloadRequest& request);

// A cache hit read as a download's body is read, so that a caller working on a wheel while it
// arrives works the same way on a cached one: request.on_stored is told once that `blob` holds
// all `size` bytes, or, with request.stream, the blob's bytes are handed to the stream piece by
// piece. Not hashed here: DownloadCache::find re-hashed the blob, as for any cache hit.
Status follow_cached_blob(const fs::path& blob, std::uint64_t size, const DownloadRequest& request);

// Reads a local file: status 200, or 404 when it does not exist.
Result<TextResponse> read_local_text(std::string_view url, std::uint64_t max_bytes);

}  // namespace venvfix::fetch::detail
