// write_file_atomic and its seam (WriteSteps): the steps it takes in order, and what is left on
// disk after each of them fails.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "support/recording_write_steps.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix {
namespace {

using RecordingSteps = testing::RecordingWriteSteps;

class WriteFileAtomic : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-fs-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
    m_file = m_dir->path() / "file";
    m_temporary = m_file.string() + ".tmp-" + std::to_string(::getpid());
    ASSERT_TRUE(write_file_atomic(m_file, "old\n"));
  }
  std::optional<TempDir> m_dir;
  fs::path m_file;
  std::string m_temporary;
};

TEST_F(WriteFileAtomic, ReplacesTheFileWithItsModeAndLeavesNoTemporary) {
  ASSERT_TRUE(write_file_atomic(m_file, "new\n", 0600));
  EXPECT_EQ(*read_file(m_file), "new\n");
  struct stat st {};
  ASSERT_EQ(::stat(m_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(fs::exists(m_temporary));
}

TEST_F(WriteFileAtomic, TakesItsStepsThroughTheSeamInOrder) {
  RecordingSteps steps;
  ASSERT_TRUE(write_file_atomic(m_file, "new\n", 0644, steps));
  const std::vector<std::string> expected = {"write " + m_temporary,
                                             "rename " + m_temporary + " " + m_file.string(),
                                             "sync_directory " + m_dir->path().string()};
  EXPECT_EQ(steps.calls(), expected);
  EXPECT_EQ(*read_file(m_file), "new\n");
}

TEST_F(WriteFileAtomic, FailedWriteOrRenameLeavesTheFileAndRemovesTheTemporary) {
  for (const char* fail : {"write", "rename"}) {
    RecordingSteps steps(fail);
    auto written = write_file_atomic(m_file, "new\n", 0644, steps);
    ASSERT_FALSE(written) << fail;
    EXPECT_EQ(written.error().message, m_file.string() + ": " + errno_message(EIO)) << fail;
    EXPECT_EQ(steps.calls().back(), "remove " + m_temporary) << fail;
    EXPECT_EQ(*read_file(m_file), "old\n") << fail;
    EXPECT_FALSE(fs::exists(m_temporary)) << fail;
  }
}

TEST_F(WriteFileAtomic, FailedDirectorySyncNamesTheDirectory) {
  RecordingSteps steps("sync_directory");
  auto written = write_file_atomic(m_file, "new\n", 0644, steps);
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().message, m_dir->path().string() + ": fsync: " + errno_message(EIO));
}

TEST_F(WriteFileAtomic, FilesAreMadeDurableEachUpToTheLimitAndSkipsASymlink) {
  const fs::path link = m_dir->path() / "link";
  fs::create_symlink("file", link);
  RecordingSteps steps;
  ASSERT_TRUE(make_files_durable(m_dir->path(), {m_file, link}, steps));
  std::vector<std::string> expected = {"sync_data " + m_file.string(),
                                       "sync_data " + link.string()};
  EXPECT_EQ(steps.calls(), expected);
}

TEST_F(WriteFileAtomic, MoreFilesThanTheLimitAreMadeDurableWithOneSyncOfTheirFilesystem) {
  std::vector<fs::path> files(k_sync_each_limit + 1, m_file);
  RecordingSteps steps;
  ASSERT_TRUE(make_files_durable(m_dir->path(), files, steps));
  std::vector<std::string> expected = {"sync_filesystem " + m_dir->path().string()};
  EXPECT_EQ(steps.calls(), expected);
}

TEST_F(WriteFileAtomic, AFileWhoseDataCannotBeMadeDurableIsNamed) {
  RecordingSteps steps("sync_data");
  auto durable = make_files_durable(m_dir->path(), {m_file}, steps);
  ASSERT_FALSE(durable);
  EXPECT_EQ(durable.error().message, m_file.string() + ": fdatasync: " + errno_message(EIO));
}

}  // namespace
}  // namespace venvfix
