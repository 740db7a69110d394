#include "venvfix/base/dir_entries.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace venvfix {

namespace detail {

long read_dir_chunk(int fd, char* buffer, std::size_t size) {
  return ::syscall(SYS_getdents64, fd, buffer, size);
}

// struct linux_dirent64: d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), d_name.
DirEntry dir_entry_at(const char* chunk, std::size_t at, std::size_t& next) {
  std::uint16_t length = 0;
  std::memcpy(&length, chunk + at + 16, sizeof length);
  next = at + length;
  return DirEntry{chunk + at + 19, static_cast<unsigned char>(chunk[at + 18])};
}

}  // namespace detail

}  // namespace venvfix
