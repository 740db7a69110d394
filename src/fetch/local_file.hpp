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

// Copies the file into the cache, hashing it on the way and checking the request's sha256
// and size. The copy (not the original) is returned, so later changes to the original cannot
// slip past the hash check.
Result<DownloadResult> copy_local_file(const DownloadCache& cache, const DownloadRequest& request);

// Reads a local file: status 200, or 404 when it does not exist.
Result<TextResponse> read_local_text(std::string_view url, std::uint64_t max_bytes);

}  // namespace venvfix::fetch::detail
