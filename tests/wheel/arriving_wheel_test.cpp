// Unpacking while the wheel downloads (ArrivingWheel): the bytes are written into a file in
// uneven pieces on another thread, as a download writes them, and install_wheel adopts the
// members only where they agree with the central directory and RECORD. Whatever arrives, the
// install's outcome is the archive's: the same tree and RECORD, or the same refusal with
// nothing left behind. Each test runs twice: fed from the file, and fed the bytes themselves
// (a streamed download: no file; install_wheel then reads the skeleton the arrival kept, and
// where that cannot stage the wheel apply reads the archive, so a refusal need only be one).
#include "venvfix/wheel/arriving_wheel.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "support/failing_disk.hpp"
#include "support/threads_refused.hpp"
#include "venvfix/base/sha256.hpp"
#include "wheel/wheel_test_support.hpp"

namespace venvfix::wheel {
namespace {

const std::string k_wheel = "demo_pkg-1.0-py3-none-any.whl";

struct Arrival {
  std::uint64_t stop_after = UINT64_MAX;  // a download cut short
  bool restart_midway = false;            // the stored bytes dropped once, then sent again
};

enum class Feed { file, stream };

class ArrivingWheelTest : public testing::StagingTest, public ::testing::WithParamInterface<Feed> {
 protected:
  void SetUp() override {
    StagingTest::SetUp();
    auto dir = TempDir::create("venvfix-arriving-");
    ASSERT_TRUE(dir);
    m_arrivals.emplace(std::move(*dir));
  }

  static bool streamed() { return GetParam() == Feed::stream; }

  // Writes `wheel` into a new file in uneven pieces on another thread, telling `arriving`
  // after each write, as fetch's Transfer does (or, streamed, hands it the pieces, offering a
  // refused piece again as a paused transfer does); returns how many bytes were written.
  std::uint64_t arrive(ArrivingWheel& arriving, const fs::path& wheel, Arrival how = {}) {
    auto bytes = read_file(wheel, 1u << 30);
    EXPECT_TRUE(bytes);
    const fs::path copy = m_arrivals->path() / ("download-" + std::to_string(m_count++));
    Fd fd(::open(copy.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    EXPECT_TRUE(fd.valid());
    std::uint64_t written = 0;
    std::thread writer([&] {
      std::mt19937 random(7);
      const std::uint64_t end = std::min<std::uint64_t>(bytes->size(), how.stop_after);
      bool restarted = !how.restart_midway;
      while (written < end) {
        const std::uint64_t piece = std::min<std::uint64_t>(end - written, 1 + random() % 9000);
        if (streamed()) {
          const std::span<const std::byte> next(
              reinterpret_cast<const std::byte*>(bytes->data() + written), piece);
          while (!arriving.write(next)) std::this_thread::yield();
        } else {
          ASSERT_EQ(::pwrite(fd.get(), bytes->data() + written, piece, static_cast<off_t>(written)),
                    static_cast<ssize_t>(piece));
        }
        written += piece;
        if (!streamed()) arriving.stored(fd.get(), written);
        if (!restarted && written > end / 2) {
          written = 0;
          restarted = true;
          if (streamed()) {
            arriving.restart();
          } else {
            ASSERT_EQ(::ftruncate(fd.get(), 0), 0);
            arriving.stored(fd.get(), 0);
          }
        }
        if (random() % 8 == 0) std::this_thread::yield();
      }
    });
    writer.join();
    return written;
  }

  static InstallOptions plain() {
    InstallOptions options;
    options.umask = 022;
    return options;
  }

  // Installs `wheel` with and without the members that arrived; both outcomes must be the same.
  // Returns how many arrived members were adopted (renamed into staging).
  std::size_t expect_same_outcome(const fs::path& wheel, Arrival how = {}) {
    SCOPED_TRACE(wheel.string());
    auto reference = stage(wheel, plain());
    ArrivingWheel arriving(m_arrivals->path() / ("members-" + std::to_string(m_count++)), 0);
    const std::uint64_t total = arrive(arriving, wheel, how);
    // Inode of each arrived file, to find it again after the install.
    std::set<ino_t> arrived;
    for (const ArrivedMember& member : arriving.finish(total)) {
      struct stat st {};
      EXPECT_EQ(::stat(member.file.c_str(), &st), 0) << member.file;
      arrived.insert(st.st_ino);
    }
    InstallOptions options = plain();
    options.arriving = &arriving;
    const auto before = testing::tree_of(m_dir->path());
    fs::path staging = m_dir->path() / ("staging-" + std::to_string(m_count++));
    fs::create_directories(staging);
    fs::path archive = wheel;
    if (streamed()) {
      if (arriving.skeleton().empty()) return 0;  // nothing to adopt: apply reads the archive
      // The skeleton, reached through a link named like the wheel (as apply reaches it).
      const fs::path named = m_arrivals->path() / ("named-" + std::to_string(m_count++));
      fs::create_directories(named);
      archive = named / wheel.filename();
      fs::create_symlink(arriving.skeleton(), archive);
    }
    auto result = install_wheel(archive, m_venv, staging, options);
    if (!reference) {
      EXPECT_FALSE(result);
      if (result) return 0;
      if (!streamed()) {
        EXPECT_EQ(result.error().message, reference.error().message);
      }
      fs::remove(staging);
      EXPECT_TRUE(testing::tree_of(m_dir->path()) == before) << "something was left behind";
      return 0;
    }
    EXPECT_TRUE(result) << result.error().message;
    if (!result) return 0;
    EXPECT_TRUE(testing::tree_of(staging) == reference->tree);
    EXPECT_EQ(result->record_text, reference->result.record_text);
    std::size_t adopted = 0;
    for (const auto& entry : fs::recursive_directory_iterator(staging)) {
      struct stat st {};
      if (::lstat(entry.path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        adopted += arrived.count(st.st_ino);
      }
    }
    return adopted;
  }

  std::optional<TempDir> m_arrivals;
};

TEST_P(ArrivingWheelTest, WellFormedWheelsAreAdoptedAndStageWhatTheArchiveStages) {
  // Members pip leaves out besides the wheel's RECORD (regenerated): in the demo wheel, the
  // setuptools wrapper democli-script.py.
  const std::vector<std::pair<fs::path, std::size_t>> wheels = {
      {testing::test_wheels() / k_wheel, 1},
      {testing::test_wheels() / "zip64" / k_wheel, 0},
      {testing::test_wheels() / "unicode_pkg-1.0-py3-none-any.whl", 0},
      {testing::test_wheels() / "cp437" / "unicode_pkg-1.0-py3-none-any.whl", 0},
      {testing::test_wheels() / "big-members" / k_wheel, 0},
      {testing::bundled_wheel("pip"), 0}};
  for (const auto& [wheel, left_out] : wheels) {
    auto contents = read_wheel(wheel);
    ASSERT_TRUE(contents) << contents.error().message;
    // Every other member is an arrived file renamed into staging.
    EXPECT_EQ(expect_same_outcome(wheel), contents->members.size() - 1 - left_out) << wheel;
  }
}

TEST_P(ArrivingWheelTest, OtherCompressionMethodsFallBackToTheArchive) {
  // bzip2 and lzma members: the arrival gives up, the archive is read, nothing is adopted.
  EXPECT_EQ(expect_same_outcome(testing::test_wheels() / "mixed" / k_wheel), 0u);
}

TEST_P(ArrivingWheelTest, HostileWheelsAreRefusedAsTheArchiveRefusesThem) {
  for (const char* dir :
       {"wrong-hash", "wrong-size", "stream-bomb", "stream-bomb-big", "stream-short",
        "stream-truncated", "corrupt-deflate", "bad-crc", "duplicate", "not-in-record",
        "record-only", "traversal", "bomb", "corrupt-cd"}) {
    EXPECT_EQ(expect_same_outcome(testing::test_wheels() / dir / k_wheel), 0u) << dir;
  }
}

TEST_P(ArrivingWheelTest, ALocalHeaderUnlikeTheCentralDirectoryIsNeverAdopted) {
  auto bytes = read_file(testing::test_wheels() / k_wheel, 1u << 20);
  ASSERT_TRUE(bytes);
  // The first member's local header: its name (at 30) gets another last letter, and (a copy)
  // its CRC (at 14) another value. The central directory still says the original.
  const std::uint16_t name_len =
      static_cast<std::uint8_t>((*bytes)[26]) |
      static_cast<std::uint16_t>(static_cast<std::uint8_t>((*bytes)[27]) << 8);
  std::string renamed = *bytes;
  renamed[30 + name_len - 1] = renamed[30 + name_len - 1] == 'x' ? 'y' : 'x';
  std::string recrc = *bytes;
  recrc[14] = static_cast<char>(recrc[14] ^ 0x5a);
  for (const auto& [name, data] : {std::pair{"renamed", renamed}, std::pair{"recrc", recrc}}) {
    const fs::path dir = m_arrivals->path() / name;
    fs::create_directories(dir);
    ASSERT_TRUE(write_file_atomic(dir / k_wheel, data));
    EXPECT_EQ(expect_same_outcome(dir / k_wheel), 0u) << name;
  }
}

TEST_P(ArrivingWheelTest, ACutOrRestartedDownloadLeavesNothingToAdopt) {
  const fs::path wheel = testing::test_wheels() / k_wheel;
  const std::uint64_t size = fs::file_size(wheel);
  {
    ArrivingWheel arriving(m_arrivals->path() / "cut", 0);
    const std::uint64_t got = arrive(arriving, wheel, Arrival{size / 2});
    EXPECT_TRUE(arriving.finish(got).empty());
  }
  {
    ArrivingWheel arriving(m_arrivals->path() / "restarted", 0);
    const std::uint64_t got = arrive(arriving, wheel, Arrival{UINT64_MAX, true});
    EXPECT_EQ(got, size);
    EXPECT_TRUE(arriving.finish(got).empty());
  }
  // Both directories are gone with their objects.
  EXPECT_FALSE(fs::exists(m_arrivals->path() / "cut"));
  EXPECT_FALSE(fs::exists(m_arrivals->path() / "restarted"));
  // A wheel that never arrived (a cache hit): nothing, at once.
  ArrivingWheel idle(m_arrivals->path() / "idle", 0);
  EXPECT_TRUE(idle.finish(0).empty());
}

TEST_P(ArrivingWheelTest, EveryMemberIsSyncedWhileArrivingAndAFailedSyncAdoptsNothing) {
  const fs::path wheel = testing::test_wheels() / k_wheel;
  // The kernel's fdatasync, recording which files it made durable.
  std::mutex mutex;
  std::set<ino_t> synced;
  const SyncAhead::SyncFunction fdatasync = SyncAhead::default_sync();
  ArrivingWheel arriving(m_arrivals->path() / "synced", 0, {}, [&](int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return errno;
    const int error = fdatasync(fd);
    std::lock_guard lock(mutex);
    synced.insert(st.st_ino);
    return error;
  });
  const std::vector<ArrivedMember>& members = arriving.finish(arrive(arriving, wheel));
  ASSERT_FALSE(members.empty());
  {
    std::lock_guard lock(mutex);  // finish() drained the syncs: each member's file is among them
    for (const ArrivedMember& member : members) {
      struct stat st {};
      ASSERT_EQ(::stat(member.file.c_str(), &st), 0) << member.file;
      EXPECT_EQ(synced.count(st.st_ino), 1u) << member.name << " was not synced";
    }
  }
  // The disk refuses (EIO): that sync may be the only report of the error, so the members are
  // not adopted and the archive is read and written again instead.
  std::atomic<int> refused = 0;
  ArrivingWheel failing(m_arrivals->path() / "failing", 0, {}, [&](int) {
    ++refused;
    return EIO;
  });
  EXPECT_TRUE(failing.finish(arrive(failing, wheel)).empty());
  EXPECT_TRUE(failing.skeleton().empty());
  EXPECT_GE(refused, 1);
}

// The same on a disk that really refuses the writes (support/failing_disk.hpp), with the
// kernel's fdatasync: the members it refused are not adopted (once the disk works again a later
// sync would say success, tests/base/disk_write_error_test.cpp), and the members of a wheel it
// kept are on the disk as they were hashed.
TEST_P(ArrivingWheelTest, OnADiskThatRefusesTheWritesNothingIsAdopted) {
  venvfix::testing::FailingDisk disk;
  if (const std::string why = disk.start(); !why.empty()) GTEST_SKIP() << why;
  const fs::path wheel = testing::test_wheels() / k_wheel;
  {
    ArrivingWheel refused(disk.root() / "refused", 0);
    disk.refuse_writes();
    // Fed from the file, the members may still be unpacked after the last byte: until finish().
    EXPECT_TRUE(refused.finish(arrive(refused, wheel)).empty());
    EXPECT_TRUE(refused.skeleton().empty());
    disk.accept_writes();
  }
  ArrivingWheel kept(disk.root() / "kept", 0);  // removes the members when it goes
  const std::vector<ArrivedMember>& members = kept.finish(arrive(kept, wheel));
  ASSERT_FALSE(members.empty());
  disk.remount();  // what is read now came from the disk
  for (const ArrivedMember& member : members) {
    auto digest = sha256_file(member.file);
    ASSERT_TRUE(digest) << digest.error().message;
    EXPECT_EQ(*digest, member.sha256) << member.name;
  }
}

TEST_P(ArrivingWheelTest, AZipBombStopsAPieceAfterItsHeadersSize) {
  // Headers and RECORD say 2 MiB (10 MiB: written on a second thread), the stream holds 256 MiB
  // of zeros: the unpacker gives up without writing more than the header's size (plus nothing:
  // the sink refuses the excess).
  for (const auto& [name, said] : {std::pair<const char*, std::uint64_t>{"stream-bomb", 2u << 20},
                                   {"stream-bomb-big", 10u << 20}}) {
    SCOPED_TRACE(name);
    const fs::path wheel = testing::test_wheels() / name / k_wheel;
    const fs::path dir = m_arrivals->path() / name;
    ArrivingWheel arriving(dir, fs::file_size(wheel));
    const std::uint64_t got = arrive(arriving, wheel);
    EXPECT_TRUE(arriving.finish(got).empty());
    std::uint64_t written = 0;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      // Not the skeleton: it leaves out every member's bytes but the metadata's.
      if (entry.is_regular_file() && entry.path().filename() != "wheel.whl") {
        written += entry.file_size();
      }
    }
    EXPECT_LE(written, said + (64u << 10));  // the small members before it, too
  }
}

// Where no thread can start (a process at its pids limit), a streamed wheel is kept whole as it
// arrives and read as the archive once complete: no second download, the same staged tree and
// RECORD. A restarted stream leaves nothing, as with a thread.
class ArrivingWheelWithoutThreads : public testing::StagingTest {};

TEST_F(ArrivingWheelWithoutThreads, AStreamedWheelIsKeptWholeAndStagesAsTheArchive) {
  const fs::path wheel = testing::test_wheels() / k_wheel;
  auto bytes = read_file(wheel, 1u << 30);
  ASSERT_TRUE(bytes);
  InstallOptions options;
  options.umask = 022;
  auto reference = stage(wheel, options);
  ASSERT_TRUE(reference) << reference.error().message;
  const fs::path arrivals = m_dir->path() / "arrivals";
  fs::create_directories(arrivals);
  // Hands `arriving` the wheel in uneven pieces, the stream restarted once halfway if asked.
  auto feed = [&](ArrivingWheel& arriving, bool restart_midway) {
    std::mt19937 random(11);
    for (std::uint64_t at = 0; at < bytes->size();) {
      const std::uint64_t piece = std::min<std::uint64_t>(bytes->size() - at, 1 + random() % 9000);
      EXPECT_TRUE(arriving.write(std::as_bytes(std::span(bytes->data() + at, piece))));
      at += piece;
      if (restart_midway && at > bytes->size() / 2) {
        arriving.restart();
        restart_midway = false;
        at = 0;
      }
    }
  };

  venvfix::testing::ThreadsRefused refused;
  if (const std::string why = refused.start(); !why.empty()) GTEST_SKIP() << why;
  {
    ArrivingWheel arriving(arrivals / "whole", 0);
    feed(arriving, false);
    EXPECT_TRUE(arriving.finish(bytes->size()).empty());
    ASSERT_FALSE(arriving.skeleton().empty());
    EXPECT_EQ(read_file(arriving.skeleton(), 1u << 30).value_or(""), *bytes);
    // Read as the archive, through a link named like the wheel (as apply reaches it).
    const fs::path named = arrivals / "named" / wheel.filename();
    fs::create_directories(named.parent_path());
    fs::create_symlink(arriving.skeleton(), named);
    options.arriving = &arriving;
    auto staged = stage(named, options);
    ASSERT_TRUE(staged) << staged.error().message;
    EXPECT_TRUE(staged->tree == reference->tree);
    EXPECT_EQ(staged->result.record_text, reference->result.record_text);
  }
  {
    ArrivingWheel arriving(arrivals / "restarted", 0);
    feed(arriving, true);
    EXPECT_TRUE(arriving.finish(bytes->size()).empty());
    EXPECT_TRUE(arriving.skeleton().empty());
  }
  EXPECT_FALSE(fs::exists(arrivals / "whole"));
  EXPECT_FALSE(fs::exists(arrivals / "restarted"));
}

INSTANTIATE_TEST_SUITE_P(Feeds, ArrivingWheelTest, ::testing::Values(Feed::file, Feed::stream),
                         [](const ::testing::TestParamInfo<Feed>& feed) {
                           return feed.param == Feed::file ? "FromTheFile" : "Streamed";
                         });

}  // namespace
}  // namespace venvfix::wheel
