// Interned paths: each distinct string stored once, in one buffer, numbered in the order first
// seen. The RECORD rows of a torch-sized venv name about 30,000 paths; a map of strings would
// cost a heap node and a heap string for each, and on a virtual machine fresh memory is the
// most expensive thing a scan touches (every new page is a fault of 10-15 µs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace venvfix::dist {

class PathTable {
 public:
  using Id = std::uint32_t;

  // Room for `paths` paths of `bytes` bytes in all, so that interning them allocates nothing.
  void reserve(std::size_t paths, std::size_t bytes);
  // The id of `path`, adding it when it is new; nullopt when the table is full (max_paths).
  std::optional<Id> intern(std::string_view path);
  static constexpr std::size_t max_paths = UINT32_MAX - 1;
  std::optional<Id> find(std::string_view path) const;
  // Valid as long as the table lives and nothing is interned. The text is followed by a NUL.
  std::string_view operator[](Id id) const {
    return std::string_view(m_text).substr(m_starts[id], m_starts[id + 1] - 1 - m_starts[id]);
  }
  const char* c_str(Id id) const { return m_text.c_str() + m_starts[id]; }
  std::size_t size() const { return m_starts.size() - 1; }

 private:
  static constexpr Id k_empty = UINT32_MAX;
  void rehash(std::size_t slot_count);

  std::string m_text;                    // every path, back to back, each followed by a NUL
  std::vector<std::size_t> m_starts{0};  // path i starts at m_text[m_starts[i]]
  std::vector<Id> m_slots;               // open addressing; a power of two in size
};

}  // namespace venvfix::dist
