#include "venvfix/dist/path_table.hpp"

#include <algorithm>
#include <functional>

namespace venvfix::dist {

namespace {

std::size_t hash_of(std::string_view text) {
  return std::hash<std::string_view>{}(text);
}

}  // namespace

void PathTable::reserve(std::size_t paths, std::size_t bytes) {
  m_text.reserve(bytes + paths);
  m_starts.reserve(paths + 1);
  std::size_t slots = 16;
  while (slots < paths * 2) slots *= 2;
  if (slots > m_slots.size()) rehash(slots);
}

void PathTable::rehash(std::size_t slot_count) {
  m_slots.assign(slot_count, k_empty);
  std::size_t mask = slot_count - 1;
  for (Id id = 0; id < size(); ++id) {
    std::size_t slot = hash_of((*this)[id]) & mask;
    while (m_slots[slot] != k_empty) slot = (slot + 1) & mask;
    m_slots[slot] = id;
  }
}

std::optional<PathTable::Id> PathTable::find(std::string_view path) const {
  if (m_slots.empty()) return std::nullopt;
  std::size_t mask = m_slots.size() - 1;
  for (std::size_t slot = hash_of(path) & mask; m_slots[slot] != k_empty;
       slot = (slot + 1) & mask) {
    if ((*this)[m_slots[slot]] == path) return m_slots[slot];
  }
  return std::nullopt;
}

std::optional<PathTable::Id> PathTable::intern(std::string_view path) {
  // At most half full, so that probes stay short.
  if ((size() + 1) * 2 > m_slots.size()) rehash(std::max<std::size_t>(16, m_slots.size() * 2));
  std::size_t mask = m_slots.size() - 1;
  std::size_t slot = hash_of(path) & mask;
  for (; m_slots[slot] != k_empty; slot = (slot + 1) & mask) {
    if ((*this)[m_slots[slot]] == path) return m_slots[slot];
  }
  if (size() >= max_paths) return std::nullopt;
  Id id = static_cast<Id>(size());
  m_text += path;
  m_text += '\0';
  m_starts.push_back(m_text.size());
  m_slots[slot] = id;
  return id;
}

}  // namespace venvfix::dist
