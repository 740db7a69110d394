// A member's bytes handed to a second thread: the thread that inflates a large member keeps
// inflating while another hashes and writes what came out before, so one long deflate stream
// (libcublasLt.so.13: 541 MB) uses two cores instead of one.
#pragma once

#include <array>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>

#include "venvfix/base/result.hpp"

namespace venvfix::wheel::detail {

class MemberPipe {
 public:
  using Consume = std::function<Status(std::span<const std::byte>)>;
  // Bytes are copied in pieces of at most this size, into a ring of k_slots of them.
  static constexpr std::size_t k_slot = 256u << 10;
  static constexpr std::size_t k_slots = 8;

  // Starts the thread that calls `consume` with every piece, in order.
  explicit MemberPipe(Consume consume);
  // Stops the thread: what it has not consumed yet is dropped (finish() first to keep it).
  ~MemberPipe();
  MemberPipe(const MemberPipe&) = delete;
  MemberPipe& operator=(const MemberPipe&) = delete;

  // Copies `data` into the ring, waiting for room. Returns the consumer's error once it has
  // failed (nothing more is consumed after that).
  Status push(std::span<const std::byte> data);
  // The same without the copy, for a producer that can write into the ring itself (an
  // inflater): the next slot to fill (k_slot bytes), waiting for room, or the consumer's error;
  // the same slot again until commit() hands its first `size` (> 0) bytes on.
  Result<std::span<std::byte>> next_slot();
  void commit(std::size_t size);
  // Waits until every pushed byte is consumed and the thread has ended; the first error of
  // `consume`, or ok(). Everything `consume` wrote is visible to the caller afterwards.
  Status finish();

 private:
  void run();

  Consume m_consume;
  std::unique_ptr<std::array<std::array<std::byte, k_slot>, k_slots>> m_ring;
  std::array<std::size_t, k_slots> m_sizes{};
  std::mutex m_mutex;
  std::condition_variable m_changed;
  std::size_t m_head = 0;   // the next slot to fill (producer)
  std::size_t m_count = 0;  // slots filled and not yet consumed
  bool m_closed = false;    // no more pushes: consume the rest, then end (finish())
  bool m_dropped = false;   // end now (the destructor)
  Status m_failure = ok();  // the consumer's first error: once set, nothing more is consumed
  std::thread m_thread;
};

}  // namespace venvfix::wheel::detail
