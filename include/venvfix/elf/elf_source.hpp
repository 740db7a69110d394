// A memo of ELF reads, so that the resolver (and doctor) read each file once. Kept across the
// analyses before and after `run`'s command, it reads again only what the command changed: once
// told that the files may have changed, it takes a record again only where a stat of its path
// gives the identity it had when it was read.
//
// Thread-safe: get() may be called from several threads at once. Two threads
// asking for the same unread path may both read it; the first result stored wins and both
// get it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "venvfix/base/fs.hpp"
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
  // What stat(2) of the path (following symlinks) said when it was read: the identity, or
  // (stat_error) why none (then all zero).
  FileIdentity stat_identity;
  int stat_error = 0;
  // A change after the read would show in stat_identity (changed_well_before), or stat failed:
  // only such a record is taken again once the files may have changed.
  bool settled = false;
};

class ElfSource {
 public:
  // The record for `path` (read on first use). Never null.
  std::shared_ptr<const ElfRecord> get(const fs::path& path);
  // The files may have changed since the records were made (`run`'s command ran): from now on
  // a record is used again only where it is settled and a stat of its path gives the identity
  // (or the error) it had; any other path is read again.
  void files_may_have_changed();
  // Number of files actually read (not served from the memo).
  std::size_t reads() const;
  // Number of records taken again after files_may_have_changed, a stat each.
  std::size_t kept() const;

 private:
  struct Entry {
    std::shared_ptr<const ElfRecord> record;
    std::uint64_t checked = 0;  // the m_epoch it was read or checked in
  };
  mutable std::mutex m_mutex;
  std::unordered_map<std::string, Entry> m_records;
  std::uint64_t m_epoch = 0;  // how many times the files may have changed
  std::size_t m_reads = 0;
  std::size_t m_kept = 0;
};

// Reads one path into a record (no memo).
ElfRecord read_elf_record(const fs::path& path);

}  // namespace venvfix::elf
