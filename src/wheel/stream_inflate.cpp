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

void StreamInflater::start(std::uint64_t limit) {
  isal_inflate_init(&m_state->inflate);
  m_state->inflate.crc_flag =
      ISAL_DEFLATE;  // raw deflate, as zip stores it; the caller checks the CRC
  m_limit = limit;
  m_outcome = InflateOutcome{};
}

Result<StreamInflater::Step> StreamInflater::feed(std::span<const std::byte> piece,
                                                  const Sink& sink) {
  const std::span<std::byte> out(m_state->out.get(), k_out_piece);
  return feed(piece, Target{[&]() -> Result<std::span<std::byte>> { return out; },
                            [&](std::size_t n) { return sink(out.first(n)); }});
}

Result<StreamInflater::Step> StreamInflater::feed(std::span<const std::byte> piece,
                                                  const Target& target) {
  inflate_state& s = m_state->inflate;
  // ISA-L's API is not const-correct; it never writes through next_in.
  s.next_in = const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(piece.data()));
  s.avail_in = static_cast<std::uint32_t>(piece.size());
  Step step;
  for (;;) {
    VENVFIX_TRY_ASSIGN(const std::span<std::byte> out, target.room());
    // Room for one byte beyond the limit, so that a longer stream shows itself.
    const std::uint64_t left = m_limit - m_outcome.produced;
    const std::uint64_t room = left < out.size() ? left + 1 : out.size();
    s.next_out = reinterpret_cast<std::uint8_t*>(out.data());
    s.avail_out = static_cast<std::uint32_t>(room);
    if (isal_inflate(&s) < 0) {
      m_outcome.failure = InflateFailure::corrupt;
      break;
    }
    const std::size_t got = static_cast<std::size_t>(room - s.avail_out);
    if (got > left) {
      m_outcome.failure = InflateFailure::too_long;
      break;
    }
    if (got != 0) VENVFIX_TRY(target.filled(got));
    m_outcome.produced += got;
    if (s.block_state == ISAL_BLOCK_FINISH) {
      step.finished = true;
      break;
    }
    if (got == 0 && s.avail_in == 0) break;  // all of the piece used: the next one is needed
  }
  step.consumed = piece.size() - s.avail_in;
  step.outcome = m_outcome;
  return step;
}

Result<InflateOutcome> StreamInflater::run(std::span<const std::byte> packed, std::uint64_t limit,
                                           const Sink& sink, const Done& done) {
  start(limit);
  for (std::size_t fed = 0;;) {
    const std::span<const std::byte> piece =
        packed.subspan(fed, std::min(k_in_piece, packed.size() - fed));
    fed += piece.size();
    VENVFIX_TRY_ASSIGN(const Step step, feed(piece, sink));
    if (!piece.empty()) done(piece);
    if (step.finished || step.outcome.failure != InflateFailure::none) return step.outcome;
    if (fed == packed.size()) {
      m_outcome.failure = InflateFailure::truncated;
      return m_outcome;
    }
  }
}

}  // namespace venvfix::wheel::detail
