// A filesystem on a disk that a test can make refuse writes, as a failing disk does: ext4
// without a journal on a loop device whose image lies on a small tmpfs of its own. While that
// tmpfs is full, every write the loop device passes on fails. The filesystem's own writes still
// succeed (into the page cache) and the error comes back where a real disk's does: at writeback,
// from fdatasync (ENOSPC or EIO). So the kernel's handling of write errors is tested as it is,
// not as a fake sync function says. device-mapper's dm-error or dm-flakey would do the same;
// this machine's kernel has no device-mapper.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "venvfix/base/fs.hpp"

namespace venvfix::testing {

class FailingDisk {
 public:
  FailingDisk() = default;
  ~FailingDisk();
  FailingDisk(const FailingDisk&) = delete;
  FailingDisk& operator=(const FailingDisk&) = delete;

  // Makes the filesystem and mounts it under a new temporary directory. Returns "" when it is
  // ready, else why it cannot be made here (not root, no loop device: the test skips, saying
  // so). A step that should have worked and did not is also a test failure.
  std::string start();

  const fs::path& root() const { return m_root; }

  void refuse_writes();  // fills the tmpfs beneath the image
  void accept_writes();  // empties it again

  // Unmounts the filesystem and mounts it again: whatever is read afterwards came from the disk.
  void remount();

 private:
  std::optional<TempDir> m_dir;
  fs::path m_backing;  // the tmpfs holding the image
  fs::path m_root;     // the filesystem on the loop device
  std::string m_loop;
  bool m_backing_mounted = false;
  bool m_mounted = false;
};

}  // namespace venvfix::testing
