// Phase two, fast: inflating, hashing and writing members on several threads straight out of
// the archive's bytes. Stored members are copied, small deflate members are inflated whole
// with libdeflate into a buffer of the thread, larger ones stream through ISA-L in fixed-size
// pieces (memory does not grow with a member), and other compression methods (bzip2, lzma)
// stream through libarchive in one pass in archive order, on one of the threads. Each byte is
// hashed (sha256 and the zip CRC) while still in cache, right before it is written with pwrite.
//
// The checks are those of stream_members: every member yields exactly its size, its sha256
// (where RECORD has one) and its zip CRC; the first failure stops every thread, and is the
// error returned (one sentence naming `display` and the member).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/wheel/wheel.hpp"
#include "wheel/member_stream.hpp"
#include "wheel/zip_index.hpp"

namespace venvfix::wheel::detail {

struct UnpackConfig {
  unsigned threads = 1;
  // Deflate members up to this size are inflated whole by libdeflate; larger ones stream
  // through ISA-L.
  std::uint64_t max_buffer_bytes = 0;
  // The archive is a read-only file mapping whose pages may be dropped once read (never for
  // bytes in anonymous memory: MADV_DONTNEED would zero them).
  bool release_input = false;
};

// `create(i)` is called (from any thread, possibly concurrently) right before member i is
// written, and returns the file to write it to, or an invalid Fd to only check the member.
using CreateFor = std::function<Result<Fd>(std::size_t member)>;

// `entries` and `match` are read_zip_index and match_members over `archive`.
Result<std::vector<StreamedMember>> unpack_members(
    std::span<const std::byte> archive, const WheelContents& contents,
    const std::vector<ZipIndexEntry>& entries, const std::vector<std::size_t>& match,
    const std::string& display, const CreateFor& create, const UnpackConfig& config);

// The number of threads worth starting for `contents` when `requested` are allowed (0: one per
// CPU, at most 8): small wheels get one.
unsigned unpack_threads(const WheelContents& contents, unsigned requested);

}  // namespace venvfix::wheel::detail
