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

// What a path that stat(2) found gives: an ELF object, or the failure the loader would meet.
ElfRecord read_found(const fs::path& path, const struct stat& st) {
  const std::string name = path.string();
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
  return record;
}

// `record` with what the path's stat said (`st`, or `stat_error`) when the read began.
ElfRecord stamped(ElfRecord record, const struct stat* st, int stat_error, std::int64_t read_ns) {
  record.stat_error = stat_error;
  if (st != nullptr) record.stat_identity = file_identity_from(*st);
  record.settled = stat_error != 0 || changed_well_before(record.stat_identity, read_ns);
  return record;
}

// Whether `path` still names what `record` was made from.
bool still_names(const ElfRecord& record, const fs::path& path) {
  if (!record.settled) return false;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return record.stat_error == errno;
  return record.stat_error == 0 && file_identity_from(st) == record.stat_identity;
}

}  // namespace

ElfRecord read_elf_record(const fs::path& path) {
  const std::string name = path.string();
  const std::int64_t read_ns = realtime_ns();
  // stat first: it classifies the failures the loader tells apart (ENOENT/ENOTDIR and EACCES
  // make it go on searching; a directory makes it fail) and gives the identity.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int error_number = errno;
    const auto state = (error_number == ENOENT || error_number == ENOTDIR)
                           ? ElfRecord::State::missing
                       : error_number == EACCES ? ElfRecord::State::no_access
                                                : ElfRecord::State::unreadable;
    return stamped(
        failed(state, error_number, fmt::format("{}: {}", name, errno_message(error_number))),
        nullptr, error_number, read_ns);
  }
  return stamped(read_found(path, st), &st, 0, read_ns);
}

std::shared_ptr<const ElfRecord> ElfSource::get(const fs::path& path) {
  const std::string key = path.string();
  std::shared_ptr<const ElfRecord> earlier;
  {
    std::lock_guard lock(m_mutex);
    if (auto it = m_records.find(key); it != m_records.end()) {
      if (it->second.checked == m_epoch) return it->second.record;
      earlier = it->second.record;
    }
  }
  if (earlier != nullptr && still_names(*earlier, path)) {
    std::lock_guard lock(m_mutex);
    Entry& entry = m_records[key];
    if (entry.record == earlier && entry.checked != m_epoch) {
      entry.checked = m_epoch;
      ++m_kept;
    }
    return entry.record;
  }
  auto record = std::make_shared<const ElfRecord>(read_elf_record(path));
  std::lock_guard lock(m_mutex);
  ++m_reads;
  Entry& entry = m_records[key];
  if (entry.record == nullptr || entry.checked != m_epoch)
    entry = Entry{std::move(record), m_epoch};
  return entry.record;
}

void ElfSource::files_may_have_changed() {
  std::lock_guard lock(m_mutex);
  ++m_epoch;
}

std::size_t ElfSource::reads() const {
  std::lock_guard lock(m_mutex);
  return m_reads;
}

std::size_t ElfSource::kept() const {
  std::lock_guard lock(m_mutex);
  return m_kept;
}

}  // namespace venvfix::elf
