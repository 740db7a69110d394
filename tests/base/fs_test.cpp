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

#include "venvfix/base/fs.hpp"

namespace venvfix {
namespace {

// The system's steps, each recorded as "op path", and the one named `fail` failing with EIO
// instead of happening.
class RecordingSteps final : public WriteSteps {
 public:
  explicit RecordingSteps(std::string fail = "") : m_fail(std::move(fail)) {}
  int write(const std::string& path, std::string_view data, mode_t mode) override {
    if (int error = enter("write", path); error != 0) return error;
    return system_write_steps().write(path, data, mode);
  }
  int rename(const std::string& from, const std::string& to) override {
    if (int error = enter("rename", from + " " + to); error != 0) return error;
    return system_write_steps().rename(from, to);
  }
  int remove(const std::string& path) override {
    if (int error = enter("remove", path); error != 0) return error;
    return system_write_steps().remove(path);
  }
  int sync_directory(const std::string& dir) override {
    if (int error = enter("sync_directory", dir); error != 0) return error;
    return system_write_steps().sync_directory(dir);
  }
  int sync_data(const std::string& path) override {
    if (int error = enter("sync_data", path); error != 0) return error;
    return system_write_steps().sync_data(path);
  }
  int sync_filesystem(const std::string& dir) override {
    if (int error = enter("sync_filesystem", dir); error != 0) return error;
    return system_write_steps().sync_filesystem(dir);
  }
  const std::vector<std::string>& calls() const { return m_calls; }

 private:
  int enter(const std::string& op, const std::string& args) {
    m_calls.push_back(op + " " + args);
    return op == m_fail ? EIO : 0;
  }
  std::string m_fail;
  std::vector<std::string> m_calls;
};

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

}  // namespace
}  // namespace venvfix
