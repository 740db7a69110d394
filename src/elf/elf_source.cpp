#include "venvfix/elf/elf_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "venvfix/base/fs.hpp"

namespace venvfix::elf {

namespace {

ElfRecord failed(ElfRecord::State state, int error_number, std::string message) {
  ElfRecord record;
  record.state = state;
  record.error_number = error_number;
  record.message = std::move(message);
  return record;
}

}  // namespace

ElfRecord read_elf_record(const fs::path& path) {
  const std::string name = path.string();
  // stat first: it classifies the failures the loader tells apart (ENOENT/ENOTDIR and EACCES
  // make it go on searching; a directory makes it fail) and gives the identity.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int error_number = errno;
    const auto state = (error_number == ENOENT || error_number == ENOTDIR)
                           ? ElfRecord::State::missing
                       : error_number == EACCES ? ElfRecord::State::no_access
                                                : ElfRecord::State::unreadable;
    return failed(state, error_number, fmt::format("{}: {}", name, errno_message(error_number)));
  }
  if (S_ISDIR(st.st_mode)) {
    return failed(ElfRecord::State::unreadable, EISDIR,
                  fmt::format("{}: {}", name, errno_message(EISDIR)));
  }
  if (::access(path.c_str(), R_OK) != 0) {
    const int error_number = errno;
    return failed(
        error_number == EACCES ? ElfRecord::State::no_access : ElfRecord::State::unreadable,
        error_number, fmt::format("{}: {}", name, errno_message(error_number)));
  }
  auto info = read_elf(path);
  if (!info) return failed(ElfRecord::State::corrupt, 0, info.error().message);
  if (!info->has_value()) {
    return failed(ElfRecord::State::not_elf, 0, fmt::format("{}: not an ELF file", name));
  }
  ElfRecord record;
  record.state = ElfRecord::State::elf;
  record.info = std::make_shared<const ElfInfo>(std::move(**info));
  record.device = static_cast<std::uint64_t>(st.st_dev);
  record.inode = static_cast<std::uint64_t>(st.st_ino);
  return record;
}

std::shared_ptr<const ElfRecord> ElfSource::get(const fs::path& path) {
  const std::string key = path.string();
  {
    std::lock_guard lock(m_mutex);
    if (auto it = m_records.find(key); it != m_records.end()) return it->second;
  }
  auto record = std::make_shared<const ElfRecord>(read_elf_record(path));
  std::lock_guard lock(m_mutex);
  ++m_reads;
  return m_records.emplace(key, std::move(record)).first->second;
}

void ElfSource::inject(const fs::path& path, ElfInfo info) {
  ElfRecord record;
  record.state = ElfRecord::State::elf;
  record.info = std::make_shared<const ElfInfo>(std::move(info));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    record.device = static_cast<std::uint64_t>(st.st_dev);
    record.inode = static_cast<std::uint64_t>(st.st_ino);
  }
  auto shared = std::make_shared<const ElfRecord>(std::move(record));
  std::lock_guard lock(m_mutex);
  m_records[path.string()] = std::move(shared);
}

std::size_t ElfSource::reads() const {
  std::lock_guard lock(m_mutex);
  return m_reads;
}

}  // namespace venvfix::elf
