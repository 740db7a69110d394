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
    std::unique_lock lock(m_mutex);
    m_changed.wait(lock, [&] { return m_count < k_slots || !m_failure; });
    if (!m_failure) return m_failure;
    const std::size_t slot = m_head;
    lock.unlock();
    // The slot is the producer's until it is counted: the consumer reads only counted slots.
    const std::size_t size = std::min(data.size(), k_slot);
    std::memcpy((*m_ring)[slot].data(), data.data(), size);
    m_sizes[slot] = size;
    data = data.subspan(size);
    lock.lock();
    m_head = (m_head + 1) % k_slots;
    ++m_count;
    lock.unlock();
    m_changed.notify_all();
  }
  return ok();
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
