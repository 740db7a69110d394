// Raw deflate streamed through ISA-L: one member's compressed bytes in, pieces of a fixed size
// out as they come, so memory does not grow with the member (a 2 GB library costs the same
// few hundred KiB as a 2 KB one). Private to the wheel module: the only place
// <isa-l/igzip_lib.h> is included is stream_inflate.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "venvfix/base/result.hpp"

namespace venvfix::wheel::detail {

// Why a stream was given up; the caller words the error (it knows the wheel and the member).
enum class InflateFailure {
  none,
  corrupt,    // not valid deflate
  truncated,  // the compressed bytes end before the stream does
  too_long,   // it would yield more than the limit (a zip bomb that shows its size late)
};

struct InflateOutcome {
  std::uint64_t produced = 0;  // bytes handed to the sink
  InflateFailure failure = InflateFailure::none;
};

class StreamInflater {
 public:
  // Output is handed on in pieces of at most this many bytes.
  static constexpr std::size_t k_out_piece = 256u << 10;
  // Compressed bytes are fed in pieces of at most this many; each is handed to `done` once the
  // inflater no longer needs it (the caller drops the pages from its mapping).
  static constexpr std::size_t k_in_piece = 4u << 20;

  StreamInflater();
  ~StreamInflater();
  StreamInflater(const StreamInflater&) = delete;
  StreamInflater& operator=(const StreamInflater&) = delete;

  using Sink = std::function<Status(std::span<const std::byte>)>;
  using Done = std::function<void(std::span<const std::byte>)>;
  // Inflates `packed`. Never hands more than `limit` bytes to `sink`: the stream is given up
  // (too_long) as soon as one byte more comes out. A sink error is returned as is.
  Result<InflateOutcome> run(std::span<const std::byte> packed, std::uint64_t limit,
                             const Sink& sink, const Done& done);

  // The same, fed piece by piece as the compressed bytes arrive (a wheel still downloading):
  // start(), then feed() the stream's consecutive pieces until one says `finished` or fails.
  struct Step {
    InflateOutcome outcome;    // so far, for the whole stream
    bool finished = false;     // the stream's last block ended
    std::size_t consumed = 0;  // bytes of the piece used (all of it unless finished)
  };
  void start(std::uint64_t limit);
  // ISA-L keeps what it still needs of `piece` in its own buffer: the caller may reuse it.
  Result<Step> feed(std::span<const std::byte> piece, const Sink& sink);

  // Where feed() inflates into when the bytes need not be copied out of the inflater's own
  // buffer (a MemberPipe's ring): `room` lends a buffer (the same one until it is filled),
  // `filled` takes its first n bytes (n > 0). Errors of either are returned as is.
  struct Target {
    std::function<Result<std::span<std::byte>>()> room;
    std::function<Status(std::size_t)> filled;
  };
  Result<Step> feed(std::span<const std::byte> piece, const Target& target);

 private:
  struct State;
  std::unique_ptr<State> m_state;
  std::uint64_t m_limit = 0;
  InflateOutcome m_outcome;
};

}  // namespace venvfix::wheel::detail
