// Reading a directory's entries straight from its descriptor with getdents64(2).
#pragma once

#include <cerrno>
#include <cstddef>
#include <memory>

namespace venvfix {

// One entry of a directory read by for_each_dir_entry.
struct DirEntry {
  const char* name;    // NUL-terminated; valid only during the visit
  unsigned char type;  // DT_* as getdents64(2) gives it; DT_UNKNOWN where the filesystem does not
};

namespace detail {
// One getdents64(2) into `buffer`: the bytes filled, 0 at the end, -1 with errno set.
long read_dir_chunk(int fd, char* buffer, std::size_t size);
// The entry at `at` of a chunk, and the offset of the next.
DirEntry dir_entry_at(const char* chunk, std::size_t at, std::size_t& next);
}  // namespace detail

// Reads the directory open at `fd` from its current offset with getdents64(2), calling
// `visit(const DirEntry&)` for every entry but "." and ".."; `visit` returns false to stop. No
// DIR stream: fdopendir costs a dup(2), an fstat(2) and an fcntl(2) for each directory, and a
// venv has thousands. Returns 0, or the errno of a failed read.
template <class Visit>
int for_each_dir_entry(int fd, Visit&& visit) {
  // On the heap, as a DIR stream's is: callers walk trees by recursing from `visit`.
  constexpr std::size_t k_size = 32768;
  const std::unique_ptr<char[]> buffer = std::make_unique_for_overwrite<char[]>(k_size);
  for (;;) {
    long filled = detail::read_dir_chunk(fd, buffer.get(), k_size);
    if (filled < 0) return errno;
    if (filled == 0) return 0;
    for (std::size_t at = 0; at < static_cast<std::size_t>(filled);) {
      std::size_t next = 0;
      DirEntry entry = detail::dir_entry_at(buffer.get(), at, next);
      at = next;
      const char* n = entry.name;
      if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;
      if (!visit(entry)) return 0;
    }
  }
}

}  // namespace venvfix
