// A memo of ELF reads, so that the resolver (and doctor) read each file once.
//
// Thread-safe: get() and inject() may be called from several threads at once. Two threads
// asking for the same unread path may both read it; the first result stored wins and both
// get it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "venvfix/elf/elf_file.hpp"

namespace venvfix::elf {

namespace fs = std::filesystem;

// What opening one path as an ELF object gave.
struct ElfRecord {
  enum class State {
    elf,         // a readable ELF file: info is set
    missing,     // ENOENT or ENOTDIR: the loader goes on searching
    no_access,   // EACCES: the loader goes on searching
    unreadable,  // another error (a directory, EIO, ELOOP, …): message says which
    not_elf,     // no ELF magic: ld.so stops with "invalid ELF header"
    corrupt,     // ELF magic but truncated or inconsistent: message says what
  };
  State state = State::missing;
  int error_number = 0;  // errno for missing/no_access/unreadable
  std::string message;   // one sentence naming the path, for every state but elf
  std::shared_ptr<const ElfInfo> info;
  std::uint64_t device = 0;  // file identity (stat, following symlinks) for state elf;
  std::uint64_t inode = 0;   // 0/0 when unknown
};

class ElfSource {
 public:
  // The record for `path` (read on first use). Never null.
  std::shared_ptr<const ElfRecord> get(const fs::path& path);
  // Uses `info` for `path` instead of reading it (the caller already parsed it). The file is
  // still stat()ed for its identity. Replaces an earlier record for the same path.
  void inject(const fs::path& path, ElfInfo info);
  // Number of files actually read (not injected, not served from the memo).
  std::size_t reads() const;

 private:
  mutable std::mutex m_mutex;
  std::unordered_map<std::string, std::shared_ptr<const ElfRecord>> m_records;
  std::size_t m_reads = 0;
};

// Reads one path into a record (no memo).
ElfRecord read_elf_record(const fs::path& path);

}  // namespace venvfix::elf
