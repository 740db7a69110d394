#include "wheel/stream_inflate.hpp"

#include <isa-l/igzip_lib.h>

#include <algorithm>

namespace venvfix::wheel::detail {

// inflate_state is about 85 KiB: kept on the heap, one per worker thread, reused per member.
struct StreamInflater::State {
  inflate_state inflate{};
  std::unique_ptr<std::byte[]> out{new std::byte[k_out_piece]};
};

StreamInflater::StreamInflater() : m_state(std::make_unique<State>()) {}
StreamInflater::~StreamInflater() = default;

Result<InflateOutcome> StreamInflater::run(std::span<const std::byte> packed, std::uint64_t limit,
                                           const Sink& sink, const Done& done) {
  inflate_state& s = m_state->inflate;
  isal_inflate_init(&s);
  s.crc_flag = ISAL_DEFLATE;  // raw deflate, as zip stores it; the caller checks the CRC
  InflateOutcome outcome;
  std::size_t fed = 0;  // bytes of `packed` given to the inflater so far
  std::span<const std::byte> piece;
  for (;;) {
    if (s.avail_in == 0 && fed < packed.size()) {
      if (!piece.empty()) done(piece);  // ISA-L keeps what it still needs in its own buffer
      piece = packed.subspan(fed, std::min(k_in_piece, packed.size() - fed));
      fed += piece.size();
      // ISA-L's API is not const-correct; it never writes through next_in.
      s.next_in = const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(piece.data()));
      s.avail_in = static_cast<std::uint32_t>(piece.size());
    }
    // Room for one byte beyond the limit, so that a longer stream shows itself.
    const std::uint64_t left = limit - outcome.produced;
    const std::uint64_t room = left < k_out_piece ? left + 1 : k_out_piece;
    s.next_out = reinterpret_cast<std::uint8_t*>(m_state->out.get());
    s.avail_out = static_cast<std::uint32_t>(room);
    if (isal_inflate(&s) < 0) {
      outcome.failure = InflateFailure::corrupt;
      break;
    }
    const std::size_t got = static_cast<std::size_t>(room - s.avail_out);
    if (got > limit - outcome.produced) {
      outcome.failure = InflateFailure::too_long;
      break;
    }
    if (got != 0) VENVFIX_TRY(sink({m_state->out.get(), got}));
    outcome.produced += got;
    if (s.block_state == ISAL_BLOCK_FINISH) break;
    if (got == 0 && s.avail_in == 0 && fed == packed.size()) {
      outcome.failure = InflateFailure::truncated;
      break;
    }
  }
  if (!piece.empty()) done(piece);
  return outcome;
}

}  // namespace venvfix::wheel::detail
