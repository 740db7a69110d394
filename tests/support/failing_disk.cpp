#include "support/failing_disk.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "support/world.hpp"

namespace venvfix::testing {
namespace {

// The image is larger than the tmpfs that holds it (it is sparse): the tmpfs, not the
// filesystem in the image, is what runs out.
constexpr off_t k_image_size = 64L << 20;
constexpr const char* k_backing_options = "size=32m";
constexpr const char* k_ext4_options = "errors=continue";

}  // namespace

std::string FailingDisk::start() {
  if (::geteuid() != 0) return "mounting a loop device needs root";
  if (run_command({"mkfs.ext4", "-V"}).exit_code != 0) return "mkfs.ext4 is missing";
  auto dir = TempDir::create("venvfix-failing-disk-");
  if (!dir) return "no temporary directory: " + dir.error().message;
  m_dir.emplace(std::move(dir).value());
  m_backing = m_dir->path() / "backing";
  m_root = m_dir->path() / "mnt";
  fs::create_directories(m_backing);
  fs::create_directories(m_root);
  if (::mount("tmpfs", m_backing.c_str(), "tmpfs", 0, k_backing_options) != 0) {
    return "cannot mount a tmpfs here: " + errno_message(errno);
  }
  m_backing_mounted = true;
  const fs::path image = m_backing / "ext4.img";
  {
    const Fd fd(::open(image.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    if (!fd.valid() || ::ftruncate(fd.get(), k_image_size) != 0) {
      ADD_FAILURE() << image << ": " << errno_message(errno);
      return "the image could not be made";
    }
  }
  // No journal: a journal write that fails would stop the whole filesystem, and the tests
  // want to see what the kernel does with one file's lost data.
  auto made = run_command({"mkfs.ext4", "-q", "-O", "^has_journal", image.string()});
  if (made.exit_code != 0) {
    ADD_FAILURE() << "mkfs.ext4 " << image << ": " << made.err;
    return "mkfs.ext4 failed";
  }
  auto loop = run_command({"losetup", "-f", "--show", image.string()});
  if (loop.exit_code != 0) return "no loop device here: " + loop.err;
  m_loop = loop.out.substr(0, loop.out.find('\n'));
  if (::mount(m_loop.c_str(), m_root.c_str(), "ext4", 0, k_ext4_options) != 0) {
    return "cannot mount ext4 from " + m_loop + ": " + errno_message(errno);
  }
  m_mounted = true;
  return {};
}

FailingDisk::~FailingDisk() {
  if (m_mounted && ::umount2(m_root.c_str(), 0) != 0) ::umount2(m_root.c_str(), MNT_DETACH);
  if (!m_loop.empty()) {
    auto detached = run_command({"losetup", "-d", m_loop});
    EXPECT_EQ(detached.exit_code, 0) << detached.err;
  }
  if (m_backing_mounted) ::umount2(m_backing.c_str(), MNT_DETACH);
}

void FailingDisk::refuse_writes() {
  const fs::path ballast = m_backing / "ballast";
  const Fd fd(::open(ballast.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd.valid()) << ballast << ": " << errno_message(errno);
  const std::vector<char> block(1 << 20, 'b');
  ssize_t wrote = 0;
  do {
    wrote = ::write(fd.get(), block.data(), block.size());
  } while (wrote > 0);
  ASSERT_EQ(errno, ENOSPC) << ballast;
}

void FailingDisk::accept_writes() {
  std::error_code error;
  fs::remove(m_backing / "ballast", error);
  ASSERT_FALSE(error) << error.message();
}

void FailingDisk::remount() {
  ASSERT_EQ(::umount2(m_root.c_str(), 0), 0) << m_root << ": " << errno_message(errno);
  m_mounted = false;
  ASSERT_EQ(::mount(m_loop.c_str(), m_root.c_str(), "ext4", 0, k_ext4_options), 0)
      << m_loop << ": " << errno_message(errno);
  m_mounted = true;
}

}  // namespace venvfix::testing
