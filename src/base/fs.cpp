#include "venvfix/base/fs.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <system_error>

namespace venvfix {

bool is_inside(const fs::path& path, const fs::path& root) {
  auto [root_end, ignored] = std::mismatch(root.begin(), root.end(), path.begin(), path.end());
  return root_end == root.end();
}

std::string errno_message(int error_number) {
  return std::strerror(error_number);
}

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = std::exchange(other.m_fd, -1);
  }
  return *this;
}

Fd::~Fd() {
  if (m_fd >= 0) ::close(m_fd);
}

Result<Fd> open_file(const fs::path& path, int flags, mode_t mode) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) {
    return make_error(ExitCode::error, "{}: {}", path.string(), errno_message(errno));
  }
  return Fd(fd);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : m_data(std::exchange(other.m_data, nullptr)), m_size(std::exchange(other.m_size, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (m_data != nullptr) ::munmap(m_data, m_size);
    m_data = std::exchange(other.m_data, nullptr);
    m_size = std::exchange(other.m_size, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (m_data != nullptr) ::munmap(m_data, m_size);
}

Result<MappedFile> MappedFile::open(const fs::path& path) {
  VENVFIX_TRY_ASSIGN(Fd fd, open_file(path, O_RDONLY));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return make_error(ExitCode::error, "{}: {}", path.string(), errno_message(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return make_error(ExitCode::error, "{}: not a regular file", path.string());
  }
  MappedFile mapped;
  if (st.st_size == 0) return mapped;
  void* data =
      ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (data == MAP_FAILED) {
    return make_error(ExitCode::error, "{}: cannot map: {}", path.string(), errno_message(errno));
  }
  mapped.m_data = data;
  mapped.m_size = static_cast<std::size_t>(st.st_size);
  return mapped;
}

Result<std::string> read_file(const fs::path& path, std::size_t max_bytes) {
  VENVFIX_TRY_ASSIGN(Fd fd, open_file(path, O_RDONLY));
  // Sized by fstat and read in place: a manifest of megabytes grown 64 KiB at a time was copied
  // (and its fresh pages faulted in) twice over. One byte more than the size tells a file that
  // grew meanwhile, or one (in /proc) whose size says 0.
  struct stat st {};
  const std::size_t expected =
      ::fstat(fd.get(), &st) == 0 && st.st_size > 0 ? static_cast<std::size_t>(st.st_size) : 0;
  const std::size_t cap =
      max_bytes == std::numeric_limits<std::size_t>::max() ? max_bytes : max_bytes + 1;
  std::string data(std::min(expected + 1, cap), '\0');
  std::size_t used = 0;
  for (;;) {
    if (used == data.size()) {
      if (used > max_bytes) {
        return make_error(ExitCode::error, "{}: larger than {} bytes", path.string(), max_bytes);
      }
      data.resize(std::min(std::max(data.size() * 2, std::size_t{65536}), cap));
    }
    ssize_t n = ::read(fd.get(), data.data() + used, data.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ExitCode::error, "{}: {}", path.string(), errno_message(errno));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  data.resize(used);
  return data;
}

Status fsync_directory(const fs::path& dir) {
  VENVFIX_TRY_ASSIGN(Fd fd, open_file(dir, O_RDONLY | O_DIRECTORY));
  if (::fsync(fd.get()) != 0) {
    return make_error(ExitCode::error, "{}: fsync: {}", dir.string(), errno_message(errno));
  }
  return ok();
}

int write_synced_at(int dirfd, const std::string& path, std::string_view data, mode_t mode) {
  int fd = ::openat(dirfd, path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return errno;
  Fd owned(fd);
  std::size_t written = 0;
  while (written < data.size()) {
    ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    written += static_cast<std::size_t>(n);
  }
  return ::fsync(fd) == 0 ? 0 : errno;
}

Status write_all(int fd, std::span<const std::byte> data, std::string_view what) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ExitCode::error, "{}: {}", what, errno_message(errno));
    }
    data = data.subspan(static_cast<std::size_t>(n));
  }
  return ok();
}

namespace {

class SystemWriteSteps final : public WriteSteps {
 public:
  int write(const std::string& path, std::string_view data, mode_t mode) override {
    return write_synced_at(AT_FDCWD, path, data, mode);
  }
  int rename(const std::string& from, const std::string& to) override {
    return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
  }
  int remove(const std::string& path) override { return ::unlink(path.c_str()) == 0 ? 0 : errno; }
  int sync_directory(const std::string& dir) override {
    Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return errno;
    return ::fsync(fd.get()) == 0 ? 0 : errno;
  }
  int sync_data(const std::string& path) override {
    Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return errno;
    return ::fdatasync(fd.get()) == 0 ? 0 : errno;
  }
  int sync_filesystem(const std::string& dir) override {
    Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return errno;
    return ::syncfs(fd.get()) == 0 ? 0 : errno;
  }
};

}  // namespace

WriteSteps& system_write_steps() {
  static SystemWriteSteps steps;
  return steps;
}

Status make_files_durable(const fs::path& dir, const std::vector<fs::path>& files,
                          WriteSteps& steps) {
  if (files.empty()) return ok();
  if (files.size() > k_sync_each_limit) {
    if (int error = steps.sync_filesystem(dir.string()); error != 0) {
      return make_error(ExitCode::error, "{}: syncfs: {}", dir.string(), errno_message(error));
    }
    return ok();
  }
  for (const fs::path& file : files) {
    int error = steps.sync_data(file.string());
    if (error == ELOOP) continue;  // a symlink
    if (error != 0) {
      return make_error(ExitCode::error, "{}: fdatasync: {}", file.string(), errno_message(error));
    }
  }
  return ok();
}

Status write_file_atomic(const fs::path& path, std::string_view data, mode_t mode,
                         WriteSteps& steps) {
  const std::string temporary = fmt::format("{}.tmp-{}", path.string(), ::getpid());
  int error = steps.write(temporary, data, mode);
  if (error == 0) error = steps.rename(temporary, path.string());
  if (error != 0) {
    (void)steps.remove(temporary);  // a write that failed half-way leaves the temporary
    return make_error(ExitCode::error, "{}: {}", path.string(), errno_message(error));
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (int synced = steps.sync_directory(dir.string()); synced != 0) {
    return make_error(ExitCode::error, "{}: fsync: {}", dir.string(), errno_message(synced));
  }
  return ok();
}

FileIdentity file_identity_from(const struct stat& st) {
  FileIdentity id;
  id.device = st.st_dev;
  id.inode = st.st_ino;
  id.size = static_cast<std::uint64_t>(st.st_size);
  id.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  id.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  id.mode = st.st_mode;
  return id;
}

std::int64_t realtime_ns() {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

bool changed_well_before(const FileIdentity& identity, std::int64_t at_ns) {
  constexpr std::int64_t k_margin_ns = 100'000'000;
  constexpr std::int64_t k_margin_whole_seconds_ns = 2'000'000'000;
  const bool whole_seconds =
      identity.mtime_ns % 1'000'000'000 == 0 && identity.ctime_ns % 1'000'000'000 == 0;
  const std::int64_t margin = whole_seconds ? k_margin_whole_seconds_ns : k_margin_ns;
  return std::max(identity.mtime_ns, identity.ctime_ns) < at_ns - margin;
}

Result<FileIdentity> file_identity(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return make_error(ExitCode::error, "{}: {}", path.string(), errno_message(errno));
  }
  return file_identity_from(st);
}

Result<FileIdentity> file_identity_follow(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return make_error(ExitCode::error, "{}: {}", path.string(), errno_message(errno));
  }
  return file_identity_from(st);
}

Result<TempDir> TempDir::create(std::string_view prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      fmt::format("{}/{}XXXXXX", base != nullptr && *base ? base : "/tmp", prefix);
  if (::mkdtemp(pattern.data()) == nullptr) {
    return make_error(ExitCode::error, "cannot create a temporary directory {}: {}", pattern,
                      errno_message(errno));
  }
  return TempDir(fs::path(pattern));
}

TempDir::~TempDir() {
  if (m_path.empty()) return;
  std::error_code ignored;
  fs::remove_all(m_path, ignored);
}

}  // namespace venvfix
