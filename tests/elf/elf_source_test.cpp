// The ELF memo kept across `run`'s analyses: after files_may_have_changed it takes a record
// again only where a stat of the path gives what it gave at the read, and only when a change
// after the read would have shown in that stat. Real objects built by the toolchain, changed as
// a command would change them, the loader-relevant answer (DT_SONAME) read back.
#include "venvfix/elf/elf_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "elf/elf_test_support.hpp"
#include "support/scratch_test.hpp"

namespace venvfix::elf {
namespace {

using testing::build_shared_object;
using testing::SharedObject;

class ElfSourceMemo : public venvfix::testing::ScratchTest {
 protected:
  ElfSourceMemo() : ScratchTest("venvfix-elf-source-test-") {}
  // Builds `name` with DT_SONAME `soname`, then waits until a change to it would show in its
  // stat (changed_well_before: 100 ms on this filesystem's nanosecond timestamps).
  void build_settled(const std::string& name, const std::string& soname) {
    build_shared_object(path(name), SharedObject(soname));
    wait_until_settled(path(name));
  }
  static void wait_until_settled(const fs::path& file) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < until) {
      auto identity = file_identity_follow(file);
      ASSERT_TRUE(identity) << identity.error().message;
      if (changed_well_before(*identity, realtime_ns())) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << file << " did not settle";
  }
  static std::string soname_of(const ElfRecord& record) {
    return record.info != nullptr ? record.info->soname : "";
  }

  ElfSource m_source;
};

TEST_F(ElfSourceMemo, AnUnchangedFileIsTakenAgainAfterOneStat) {
  build_settled("liba.so", "liba.so");
  auto first = m_source.get(path("liba.so"));
  EXPECT_TRUE(first->settled);
  EXPECT_EQ(m_source.get(path("liba.so")), first) << "the memo";
  EXPECT_EQ(m_source.kept(), 0U) << "no stat before the files may have changed";
  m_source.files_may_have_changed();
  EXPECT_EQ(m_source.get(path("liba.so")), first);
  EXPECT_EQ(m_source.get(path("liba.so")), first);
  EXPECT_EQ(m_source.reads(), 1U);
  EXPECT_EQ(m_source.kept(), 1U) << "checked once per change, not per get";
}

// The hardest case for a stat: the same inode, the same size and mtime (set back), other bytes.
// Only ctime tells it, and the loader would see the new DT_SONAME.
TEST_F(ElfSourceMemo, AFileRewrittenInPlaceWithItsMtimeSetBackIsReadAgain) {
  build_settled("liba.so", "libaa.so");
  const fs::path file = path("liba.so");
  EXPECT_EQ(soname_of(*m_source.get(file)), "libaa.so");
  struct stat was {};
  ASSERT_EQ(::stat(file.c_str(), &was), 0);
  std::string bytes = *read_file(file);
  const std::size_t at = bytes.find("libaa.so");
  ASSERT_NE(at, std::string::npos);
  {
    std::fstream out(file, std::ios::in | std::ios::out | std::ios::binary);  // same inode
    out.seekp(static_cast<std::streamoff>(at) + 4);
    out.put('b');
  }
  const struct timespec times[2] = {was.st_atim, was.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), times, 0), 0);
  struct stat now {};
  ASSERT_EQ(::stat(file.c_str(), &now), 0);
  ASSERT_EQ(now.st_ino, was.st_ino);
  ASSERT_EQ(now.st_size, was.st_size);
  m_source.files_may_have_changed();
  EXPECT_EQ(soname_of(*m_source.get(file)), "libab.so");
  EXPECT_EQ(m_source.reads(), 2U);
  EXPECT_EQ(m_source.kept(), 0U);
}

TEST_F(ElfSourceMemo, AFileReplacedRemovedOrCreatedIsReadAgain) {
  build_settled("liba.so", "liba.so");
  build_settled("libb.so", "libb.so");
  build_settled("libc.so.new", "libc2.so");
  EXPECT_EQ(soname_of(*m_source.get(path("liba.so"))), "liba.so");
  EXPECT_EQ(m_source.get(path("libb.so"))->state, ElfRecord::State::elf);
  EXPECT_EQ(m_source.get(path("libc.so"))->state, ElfRecord::State::missing);
  fs::rename(path("libb.so"), path("liba.so"));  // replaced: another inode
  fs::rename(path("libc.so.new"), path("libc.so"));
  m_source.files_may_have_changed();
  EXPECT_EQ(soname_of(*m_source.get(path("liba.so"))), "libb.so");
  EXPECT_EQ(m_source.get(path("libb.so"))->state, ElfRecord::State::missing);
  EXPECT_EQ(soname_of(*m_source.get(path("libc.so"))), "libc2.so");
  EXPECT_EQ(m_source.reads(), 6U);
  EXPECT_EQ(m_source.kept(), 0U);
}

// A file changed just before it was read could change again within the same clock tick without
// its stat showing it: such a record is never taken again, however the stat looks. (Its mtime is
// set a minute ahead, so that "just before" does not depend on how fast this host runs.)
TEST_F(ElfSourceMemo, AFileChangedJustBeforeItsReadIsReadAgainThoughItsStatIsTheSame) {
  build_settled("liba.so", "liba.so");
  const fs::path file = path("liba.so");
  const auto set_mtime = [&](std::int64_t offset_s) {
    struct timespec times[2] = {{0, UTIME_OMIT}, {}};
    ::clock_gettime(CLOCK_REALTIME, &times[1]);
    times[1].tv_sec += offset_s;
    ASSERT_EQ(::utimensat(AT_FDCWD, file.c_str(), times, 0), 0);
  };
  set_mtime(60);
  auto first = m_source.get(file);
  ASSERT_FALSE(first->settled);
  m_source.files_may_have_changed();
  auto again = m_source.get(file);
  EXPECT_NE(again, first);
  EXPECT_EQ(soname_of(*again), "liba.so");
  EXPECT_EQ(m_source.reads(), 2U);
  EXPECT_EQ(m_source.kept(), 0U);
  // Read well after its last change, the record is settled and is taken again from then on.
  set_mtime(-60);
  wait_until_settled(file);
  m_source.files_may_have_changed();
  auto settled = m_source.get(file);
  EXPECT_TRUE(settled->settled);
  m_source.files_may_have_changed();
  EXPECT_EQ(m_source.get(file), settled);
  EXPECT_EQ(m_source.reads(), 3U);
  EXPECT_EQ(m_source.kept(), 1U);
}

}  // namespace
}  // namespace venvfix::elf
