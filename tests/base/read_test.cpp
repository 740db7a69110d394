// read_file (sized by fstat, read in place) and for_each_dir_entry (getdents64 without a DIR
// stream), each against what the system says: the bytes written, std::filesystem's listing.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "venvfix/base/dir_entries.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix {
namespace {

class Reading : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-read-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
  }
  fs::path write(const std::string& name, const std::string& bytes) {
    fs::path file = m_dir->path() / name;
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }
  std::optional<TempDir> m_dir;
};

TEST_F(Reading, ReadFileReturnsEveryByteOfFilesOfAnySize) {
  for (std::size_t size : {0UL, 1UL, 4095UL, 65536UL, 65537UL, (3UL << 20) + 7}) {
    std::string bytes(size, '\0');
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 131 % 251);
    auto read = read_file(write("f" + std::to_string(size), bytes), 8u << 20);
    ASSERT_TRUE(read) << size;
    EXPECT_EQ(*read, bytes) << size;
  }
}

TEST_F(Reading, ReadFileTakesTheLimitExactlyAndRefusesOneByteMore) {
  fs::path file = write("limit", std::string(1000, 'x'));
  EXPECT_TRUE(read_file(file, 1000));
  auto over = read_file(file, 999);
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().message.find(file.string()), std::string::npos);
  EXPECT_NE(over.error().message.find("larger than 999 bytes"), std::string::npos);
  EXPECT_FALSE(read_file(file, 0));
}

// /proc files say their size is 0: the read must not stop at the size fstat gives.
TEST_F(Reading, ReadFileReadsFilesWhoseSizeSaysZero) {
  auto status = read_file("/proc/self/status", 1u << 20);
  ASSERT_TRUE(status);
  EXPECT_NE(status->find("Pid:"), std::string::npos);
}

TEST_F(Reading, ForEachDirEntryListsWhatStdFilesystemListsWithTheirTypes) {
  // Enough long names to take several getdents64 calls of 32 KiB.
  std::map<std::string, unsigned char> made;
  for (int i = 0; i < 700; ++i) {
    std::string name = "file-with-a-long-name-to-fill-the-buffer-" + std::to_string(i) + ".py";
    write(name, "x");
    made[name] = DT_REG;
  }
  fs::create_directory(m_dir->path() / "sub");
  made["sub"] = DT_DIR;
  fs::create_symlink("sub", m_dir->path() / "link");
  made["link"] = DT_LNK;

  Fd fd(::open(m_dir->path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  std::map<std::string, unsigned char> seen;
  int error = for_each_dir_entry(fd.get(), [&](const DirEntry& entry) {
    seen.emplace(entry.name, entry.type);
    return true;
  });
  EXPECT_EQ(error, 0);
  std::map<std::string, unsigned char> listed;  // std::filesystem's names; the types made
  for (const auto& entry : fs::directory_iterator(m_dir->path())) {
    listed[entry.path().filename().string()] = made.at(entry.path().filename().string());
  }
  EXPECT_EQ(seen.size(), 702U);
  // Where the filesystem gives no type, DT_UNKNOWN is what getdents64 says: compare names only.
  if (seen.at("sub") == DT_UNKNOWN) {
    for (auto& [name, type] : listed) type = DT_UNKNOWN;
  }
  EXPECT_EQ(seen, listed);
}

TEST_F(Reading, ForEachDirEntryStopsWhenTheVisitSaysSo) {
  for (int i = 0; i < 10; ++i) write("f" + std::to_string(i), "");
  Fd fd(::open(m_dir->path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  int visits = 0;
  EXPECT_EQ(for_each_dir_entry(fd.get(), [&](const DirEntry&) { return ++visits < 3; }), 0);
  EXPECT_EQ(visits, 3);
}

TEST_F(Reading, ForEachDirEntryGivesTheErrorOfAnUnreadableDescriptor) {
  Fd file(::open(write("plain", "x").c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(for_each_dir_entry(file.get(), [](const DirEntry&) { return true; }), ENOTDIR);
  EXPECT_EQ(for_each_dir_entry(-1, [](const DirEntry&) { return true; }), EBADF);
}

}  // namespace
}  // namespace venvfix
