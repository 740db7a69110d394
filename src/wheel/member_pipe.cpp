#include "wheel/member_pipe.hpp"

#include <algorithm>
#include <cstring>

namespace venvfix::wheel::detail {

MemberPipe::MemberPipe(Consume consume)
    : m_consume(std::move(consume)),
      m_ring(std::make_unique<std::array<std::array<std::byte, k_slot>, k_slots>>()),
      m_thread([this] { run(); }) {}

MemberPipe::~MemberPipe() {
  {
    std::lock_guard lock(m_mutex);
    m_dropped = true;
  }
  m_changed.notify_all();
  if (m_thread.joinable()) m_thread.join();
}

Status MemberPipe::push(std::span<const std::byte> data) {
  while (!data.empty()) {
    VENVFIX_TRY_ASSIGN(const std::span<std::byte> slot, next_slot());
    const std::size_t size = std::min(data.size(), slot.size());
    std::memcpy(slot.data(), data.data(), size);
    commit(size);
    data = data.subspan(size);
  }
  return ok();
}

Result<std::span<std::byte>> MemberPipe::next_slot() {
  std::unique_lock lock(m_mutex);
  m_changed.wait(lock, [&] { return m_count < k_slots || !m_failure; });
  if (!m_failure) return m_failure.error();
  // The slot is the producer's until it is counted: the consumer reads only counted slots.
  return std::span<std::byte>((*m_ring)[m_head]);
}

void MemberPipe::commit(std::size_t size) {
  {
    std::lock_guard lock(m_mutex);
    m_sizes[m_head] = size;
    m_head = (m_head + 1) % k_slots;
    ++m_count;
  }
  m_changed.notify_all();
}

Status MemberPipe::finish() {
  {
    std::lock_guard lock(m_mutex);
    m_closed = true;
  }
  m_changed.notify_all();
  if (m_thread.joinable()) m_thread.join();
  return m_failure;
}

void MemberPipe::run() {
  std::size_t tail = 0;
  for (;;) {
    std::unique_lock lock(m_mutex);
    m_changed.wait(lock, [&] { return m_count > 0 || m_closed || m_dropped; });
    if (m_dropped || m_count == 0) return;  // dropped, or closed and drained
    const std::size_t size = m_sizes[tail];
    lock.unlock();
    Status consumed = m_consume(std::span<const std::byte>((*m_ring)[tail].data(), size));
    lock.lock();
    tail = (tail + 1) % k_slots;
    --m_count;
    if (!consumed) {
      m_failure = std::move(consumed);
      lock.unlock();
      m_changed.notify_all();
      return;
    }
    lock.unlock();
    m_changed.notify_all();
  }
}

}  // namespace venvfix::wheel::detail
