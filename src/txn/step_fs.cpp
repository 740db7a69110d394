#include "venvfix/txn/step_fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "venvfix/base/dir_entries.hpp"

namespace venvfix::txn {

namespace {

int errno_unless(bool done) {
  return done ? 0 : errno;
}

// unlinkat(2) of a whole tree, relative to dirfd; an absent tree is not an error. Keeps going
// after a failure and returns the first errno.
int remove_tree_fd(int dirfd, const std::string& path) {
  if (::unlinkat(dirfd, path.c_str(), 0) == 0 || errno == ENOENT) return 0;
  if (errno != EISDIR) return errno;
  const Fd dir(::openat(dirfd, path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) return errno == ENOENT ? 0 : errno;
  int first = 0;
  const int read_error = for_each_dir_entry(dir.get(), [&](const DirEntry& entry) {
    const int error = remove_tree_fd(dir.get(), entry.name);
    if (first == 0) first = error;
    return true;
  });
  if (first == 0) first = read_error;
  if (first != 0) return first;
  return errno_unless(::unlinkat(dirfd, path.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT);
}

}  // namespace

int RealStepFs::make_dir(int dirfd, const std::string& path, mode_t mode) {
  return errno_unless(::mkdirat(dirfd, path.c_str(), mode) == 0);
}

int RealStepFs::set_mode(int dirfd, const std::string& path, mode_t mode) {
  return errno_unless(::fchmodat(dirfd, path.c_str(), mode, 0) == 0);
}

int RealStepFs::rename(int dirfd, const std::string& from, const std::string& to) {
  return errno_unless(::renameat(dirfd, from.c_str(), dirfd, to.c_str()) == 0);
}

int RealStepFs::link(int dirfd, const std::string& from, const std::string& to) {
  return errno_unless(::linkat(dirfd, from.c_str(), dirfd, to.c_str(), 0) == 0);
}

int RealStepFs::symlink(const std::string& target, int dirfd, const std::string& path) {
  return errno_unless(::symlinkat(target.c_str(), dirfd, path.c_str()) == 0);
}

int RealStepFs::remove(int dirfd, const std::string& path, Remove what) {
  switch (what) {
    case Remove::file:
      return errno_unless(::unlinkat(dirfd, path.c_str(), 0) == 0);
    case Remove::empty_dir:
      return errno_unless(::unlinkat(dirfd, path.c_str(), AT_REMOVEDIR) == 0);
    case Remove::tree:
      return remove_tree_fd(dirfd, path);
  }
  return EINVAL;
}

int RealStepFs::write(int dirfd, const std::string& path, std::string_view data, mode_t mode) {
  return write_synced_at(dirfd, path, data, mode);
}

int RealStepFs::sync(int dirfd, const std::string& path, Sync what) {
  int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (what == Sync::directory ? O_DIRECTORY : 0);
  int fd = ::openat(dirfd, path.empty() ? "." : path.c_str(), flags);
  if (fd < 0) return errno;
  Fd owned(fd);
  return errno_unless((what == Sync::directory ? ::fsync(fd) : ::fdatasync(fd)) == 0);
}

int RealStepFs::sync_fs(int dirfd) {
  return errno_unless(::syncfs(dirfd) == 0);
}

namespace {

// write_file_atomic's steps as operations of a StepFs on absolute paths: the temporary's write,
// its rename over the file and the directory's fsync are writes a fault test counts and fails.
class SeamWriteSteps final : public WriteSteps {
 public:
  explicit SeamWriteSteps(StepFs& disk) : m_disk(disk) {}
  int write(const std::string& path, std::string_view data, mode_t mode) override {
    return m_disk.write(AT_FDCWD, path, data, mode);
  }
  int rename(const std::string& from, const std::string& to) override {
    return m_disk.rename(AT_FDCWD, from, to);
  }
  int remove(const std::string& path) override {
    return m_disk.remove(AT_FDCWD, path, StepFs::Remove::file);
  }
  int sync_directory(const std::string& dir) override {
    return m_disk.sync(AT_FDCWD, dir, StepFs::Sync::directory);
  }
  int sync_data(const std::string& path) override {
    return m_disk.sync(AT_FDCWD, path, StepFs::Sync::file_data);
  }
  int sync_filesystem(const std::string& dir) override {
    Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return errno;
    return m_disk.sync_fs(fd.get());
  }

 private:
  StepFs& m_disk;
};

}  // namespace

Status write_atomic(StepFs& disk, const fs::path& path, std::string_view data, mode_t mode) {
  SeamWriteSteps steps(disk);
  return write_file_atomic(path, data, mode, steps);
}

Status make_files_durable(StepFs& disk, const fs::path& dir, const std::vector<fs::path>& files) {
  SeamWriteSteps steps(disk);
  return venvfix::make_files_durable(dir, files, steps);
}

}  // namespace venvfix::txn
