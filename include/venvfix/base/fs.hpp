// Non-throwing filesystem wrappers and RAII handles. Every failure comes back as an Error that
// names the path and the system's reason.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"

namespace venvfix {

namespace fs = std::filesystem;

// Owns a file descriptor; closes it on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : m_fd(fd) {}
  Fd(Fd&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();

  int get() const { return m_fd; }
  bool valid() const { return m_fd >= 0; }
  int release() { return std::exchange(m_fd, -1); }

 private:
  int m_fd = -1;
};

// Opens `path` with open(2) flags; the error names the path.
Result<Fd> open_file(const fs::path& path, int flags, mode_t mode = 0644);

// A read-only memory map of a whole file. An empty file maps to an empty span.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  static Result<MappedFile> open(const fs::path& path);

  std::span<const std::byte> bytes() const {
    return {static_cast<const std::byte*>(m_data), m_size};
  }
  std::string_view view() const { return {static_cast<const char*>(m_data), m_size}; }
  std::size_t size() const { return m_size; }

 private:
  void* m_data = nullptr;
  std::size_t m_size = 0;
};

// Reads a whole file. Files larger than `max_bytes` are an error (protects against reading a
// multi-gigabyte file by mistake where a small text file is expected).
Result<std::string> read_file(const fs::path& path, std::size_t max_bytes = 256u << 20);

// write(2) all of `data`, retrying on EINTR and short writes; an error names `what` (the file).
Status write_all(int fd, std::span<const std::byte> data, std::string_view what);

// Creates or truncates `path` (relative to `dirfd`; AT_FDCWD: the working directory) with
// `mode`, writes all of `data` and fsyncs it. Returns 0 or the errno of the failure.
int write_synced_at(int dirfd, const std::string& path, std::string_view data, mode_t mode);

// The system calls of write_file_atomic (and of the files a caller makes durable before it), as
// a seam (ninja's DiskInterface): each returns 0 or the errno of the failure.
// system_write_steps() makes them directly; the transaction engine passes its txn::StepFs
// through one (txn::write_atomic), so that the fault tests fail and count the journal's and
// commit marker's writes like every other write of a transaction.
class WriteSteps {
 public:
  virtual ~WriteSteps() = default;
  // Creates or truncates `path` with `mode`, writes `data` and fsyncs it (write_synced_at).
  virtual int write(const std::string& path, std::string_view data, mode_t mode) = 0;
  virtual int rename(const std::string& from, const std::string& to) = 0;
  virtual int remove(const std::string& path) = 0;  // unlink(2)
  virtual int sync_directory(const std::string& dir) = 0;
  virtual int sync_data(const std::string& path) = 0;       // fdatasync(2) of a file
  virtual int sync_filesystem(const std::string& dir) = 0;  // syncfs(2) of dir's filesystem
};
WriteSteps& system_write_steps();

// Writes `data` to a temporary file beside `path` (fsync'd), renames it over `path` and fsyncs
// the directory, each step through `steps`. After a failure `path` is unchanged and the
// temporary removed; errors name `path` (or, for the last step, its directory).
Status write_file_atomic(const fs::path& path, std::string_view data, mode_t mode = 0644,
                         WriteSteps& steps = system_write_steps());

// fsyncs a directory so that renames and creations inside it are durable.
Status fsync_directory(const fs::path& dir);

// Up to this many files, make_files_durable gives each an fdatasync; more get one syncfs.
inline constexpr std::size_t k_sync_each_limit = 64;

// Makes the data of `files` durable through `steps`: an fdatasync each or, beyond
// k_sync_each_limit files, one syncfs of `dir`'s filesystem (thousands of fdatasyncs would
// each wait for a journal commit). A symlink among them (ELOOP) is skipped: its target is
// metadata, made durable with its directory. Errors name the file (or `dir`).
Status make_files_durable(const fs::path& dir, const std::vector<fs::path>& files,
                          WriteSteps& steps = system_write_steps());

// The identity of a file as stat(2) reports it; two equal identities mean "not changed" for
// the purpose of caches (same inode, size and timestamps).
struct FileIdentity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::uint32_t mode = 0;

  bool operator==(const FileIdentity&) const = default;
};

// The identity of what stat(2)/lstat(2)/fstatat(2) returned.
FileIdentity file_identity_from(const struct stat& st);

// CLOCK_REALTIME in nanoseconds since the epoch: the clock file timestamps are set from.
std::int64_t realtime_ns();

// Whether a write at or after `at_ns` (wall clock, ns since the epoch) would change `identity`'s
// timestamps, so that an unchanged identity later means unchanged bytes. Not when the file was
// changed too close to `at_ns`: a write within the same filesystem clock tick leaves mtime and
// ctime as they were ("racy", as git calls it). The margin covers coarse kernel clocks (100 ms)
// and filesystems with whole-second timestamps (2 s).
bool changed_well_before(const FileIdentity& identity, std::int64_t at_ns);

// lstat(2)s `path`. A missing file is an error with message "<path>: No such file…".
Result<FileIdentity> file_identity(const fs::path& path);
// stat(2) (follows symlinks).
Result<FileIdentity> file_identity_follow(const fs::path& path);

// A directory created under $TMPDIR (or /tmp) and removed with its contents on destruction.
class TempDir {
 public:
  static Result<TempDir> create(std::string_view prefix = "venvfix-");
  TempDir(TempDir&& other) noexcept : m_path(std::move(other.m_path)) { other.m_path.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  const fs::path& path() const { return m_path; }

 private:
  explicit TempDir(fs::path path) : m_path(std::move(path)) {}
  fs::path m_path;
};

// True when `path` is `root` or lies under it, compared component by component without touching
// the filesystem (both should be lexically normal).
bool is_inside(const fs::path& path, const fs::path& root);

// strerror(errno) as a string; for messages.
std::string errno_message(int error_number);

}  // namespace venvfix
