// The parallel unpacker against the reference: for every way a member can be stored (stored,
// deflate through libdeflate, deflate streamed through ISA-L, bzip2 and lzma through the
// libarchive pass, zip64 fields),
// installing with Unpack::parallel (several thread counts and buffer sizes) stages exactly the
// tree, the InstallResult and the RECORD that Unpack::streaming stages. Corrupt members are
// refused by both with one sentence, and leave nothing behind.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "support/threads_refused.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/wheel/unpacked_cache.hpp"
#include "venvfix/wheel/wheel.hpp"
#include "wheel/wheel_test_support.hpp"
#include "wheel/zip_index.hpp"

namespace venvfix::wheel {
namespace {

using testing::Staged;

class WheelParallelUnpack : public testing::StagingTest {
 protected:
  static InstallOptions parallel(unsigned threads, std::uint64_t max_buffer) {
    InstallOptions options;
    options.unpack = Unpack::parallel;
    options.threads = threads;
    options.max_buffer_bytes = max_buffer;
    options.umask = 022;
    return options;
  }
  static InstallOptions streaming() {
    InstallOptions options;
    options.unpack = Unpack::streaming;
    options.umask = 022;
    return options;
  }

  // Every parallel configuration stages what the streaming reference stages.
  static std::vector<InstallOptions> every_variant() {
    return {
        parallel(1, 512u << 20), parallel(2, 512u << 20),
        parallel(4, 512u << 20), parallel(3, 0),  // every deflate member streamed through ISA-L
        parallel(2, 1 << 20),  // large members streamed, small ones through libdeflate
        parallel(1, 1 << 20),
    };
  }

  void expect_same_as_streaming(const fs::path& wheel,
                                const std::vector<InstallOptions>& variants = every_variant()) {
    auto reference = stage(wheel, streaming());
    ASSERT_TRUE(reference) << reference.error().message;
    for (const InstallOptions& options : variants) {
      SCOPED_TRACE(
          fmt::format("threads {}, max_buffer {}", options.threads, options.max_buffer_bytes));
      auto staged = stage(wheel, options);
      ASSERT_TRUE(staged) << staged.error().message;
      for (const auto& [path, file] : reference->tree) {
        auto it = staged->tree.find(path);
        if (it == staged->tree.end()) {
          ADD_FAILURE() << "missing " << path;
        } else if (!(it->second == file)) {
          ADD_FAILURE() << "differs: " << path
                        << fmt::format(" mode {:o} vs {:o}, {} vs {} bytes", it->second.mode,
                                       file.mode, it->second.content.size(), file.content.size());
        }
      }
      EXPECT_EQ(staged->tree.size(), reference->tree.size());
      EXPECT_EQ(staged->result.record_text, reference->result.record_text);
      EXPECT_EQ(staged->result.dist_info, reference->result.dist_info);
      ASSERT_EQ(staged->result.files.size(), reference->result.files.size());
      for (std::size_t i = 0; i < staged->result.files.size(); ++i) {
        const InstalledFile& a = staged->result.files[i];
        const InstalledFile& b = reference->result.files[i];
        EXPECT_EQ(a.path, b.path);
        EXPECT_EQ(a.mode, b.mode) << a.path;
        EXPECT_EQ(a.size, b.size) << a.path;
        EXPECT_EQ(a.sha256, b.sha256) << a.path;
      }
      // Created in another order, but the same directories, each after its parent.
      const auto& dirs = staged->result.directories;
      EXPECT_EQ(std::set<std::string>(dirs.begin(), dirs.end()),
                std::set<std::string>(reference->result.directories.begin(),
                                      reference->result.directories.end()));
      std::set<std::string> seen;
      for (const std::string& dir : dirs) {
        auto slash = dir.rfind('/');
        if (slash != std::string::npos) {
          EXPECT_EQ(seen.count(dir.substr(0, slash)), 1u) << dir << " before its parent";
        }
        seen.insert(dir);
      }
    }
  }

  // Both readers refuse `wheel` with a message holding `parallel_says` / `streaming_says`,
  // ExitCode::usage, and the staging directory's parent is as it was.
  void expect_refused(const fs::path& wheel, const std::string& parallel_says,
                      const std::string& streaming_says) {
    expect_refused_each(wheel, {{parallel(2, 512u << 20), parallel_says},
                                {streaming(), streaming_says},
                                {parallel(2, 0), streaming_says}});
  }

  // Each configuration refuses `wheel` with a message holding its expected text.
  void expect_refused_each(const fs::path& wheel,
                           const std::vector<std::pair<InstallOptions, std::string>>& cases) {
    for (const auto& [options, expected] : cases) {
      SCOPED_TRACE(fmt::format("unpack {}, threads {}, max_buffer {}",
                               options.unpack == Unpack::parallel ? "parallel" : "streaming",
                               options.threads, options.max_buffer_bytes));
      fs::path staging = m_dir->path() / "refused";
      fs::create_directories(staging);
      auto before = testing::tree_of(m_dir->path());
      auto result = install_wheel(wheel, m_venv, staging, options);
      ASSERT_FALSE(result);
      const std::string& message = result.error().message;
      EXPECT_EQ(result.error().code, ExitCode::usage) << message;
      EXPECT_NE(message.find(expected), std::string::npos) << message;
      EXPECT_NE(message.find(wheel.string()), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      EXPECT_TRUE(testing::tree_of(m_dir->path()) == before) << message;
    }
  }
};

const std::string k_wheel = "demo_pkg-1.0-py3-none-any.whl";

TEST_F(WheelParallelUnpack, EveryCompressionMethodSameAsStreaming) {
  expect_same_as_streaming(testing::test_wheels() / "mixed" / k_wheel);
}

TEST_F(WheelParallelUnpack, DemoWheelSameAsStreaming) {
  expect_same_as_streaming(testing::test_wheels() / k_wheel);
}

TEST_F(WheelParallelUnpack, BundledPipSameAsStreaming) {
  // About a thousand small files: two variants keep the test short.
  expect_same_as_streaming(testing::bundled_wheel("pip"),
                           {parallel(4, 512u << 20), parallel(3, 0)});
}

TEST_F(WheelParallelUnpack, WhereNoThreadCanStartTheCallingThreadDoesItAll) {
  // A container at its pids.max: the parallel unpacker, and the copies out of the unpacked-wheel
  // cache, do every member on the calling thread, and stage the same as with threads.
  const fs::path wheel = testing::test_wheels() / "big-members" / k_wheel;
  UnpackedCache cache(m_dir->path() / "cache");
  InstallOptions keep = parallel(4, 512u << 20);
  keep.keep_unpacked = &cache;
  keep.wheel_sha256_hex = to_hex(*sha256_file(wheel));
  auto with_threads = stage(wheel, keep);
  ASSERT_TRUE(with_threads) << with_threads.error().message;
  const std::optional<UnpackedWheel> entry = cache.find(keep.wheel_sha256_hex);
  ASSERT_TRUE(entry);
  InstallOptions copied = parallel(4, 512u << 20);
  copied.from_unpacked = &*entry;
  copied.link_mode = LinkMode::copy;

  venvfix::testing::ThreadsRefused refused;
  if (const std::string why = refused.start(); !why.empty()) GTEST_SKIP() << why;
  expect_same_as_streaming(wheel, {parallel(4, 512u << 20), parallel(3, 0), copied});
  auto from_cache = stage(wheel, copied);
  ASSERT_TRUE(from_cache) << from_cache.error().message;
  EXPECT_TRUE(from_cache->tree == with_threads->tree);
  EXPECT_EQ(from_cache->result.record_text, with_threads->result.record_text);
}

TEST_F(WheelParallelUnpack, NonAsciiNamesTakeTheParallelPath) {
  // The index decodes names as read_wheel does (UTF-8 with the flag, CP437 without), so the
  // members match and the parallel path is taken, not the streaming fallback.
  for (const char* dir : {"", "cp437"}) {
    const fs::path wheel = testing::test_wheels() / dir / "unicode_pkg-1.0-py3-none-any.whl";
    auto contents = read_wheel(wheel);
    ASSERT_TRUE(contents) << contents.error().message;
    auto map = MappedFile::open(wheel);
    ASSERT_TRUE(map);
    auto index = detail::read_zip_index(map->bytes());
    ASSERT_TRUE(index) << wheel;
    auto match = detail::match_members(*contents, *index);
    ASSERT_TRUE(match) << wheel;
    for (std::size_t i = 0; i < contents->members.size(); ++i) {
      EXPECT_EQ((*index)[(*match)[i]].name, contents->members[i].name);
    }
    expect_same_as_streaming(wheel, {parallel(2, 512u << 20)});
  }
}

TEST_F(WheelParallelUnpack, Zip64FieldsSameAsStreaming) {
  expect_same_as_streaming(testing::test_wheels() / "zip64" / k_wheel);
}

TEST_F(WheelParallelUnpack, CorruptDeflateStreamIsRefused) {
  // libarchive words it as zlib does; libdeflate only knows the stream is bad.
  expect_refused(testing::test_wheels() / "corrupt-deflate" / k_wheel,
                 "member demo_pkg/b.txt has a corrupt deflate stream", "demo_pkg/b.txt");
}

TEST_F(WheelParallelUnpack, CrcMismatchOfUnhashedMemberIsRefused) {
  expect_refused(testing::test_wheels() / "bad-crc" / k_wheel,
                 "member demo_pkg-1.0.dist-info/RECORD.jws fails its zip CRC-32 check",
                 "demo_pkg-1.0.dist-info/RECORD.jws");
}

TEST_F(WheelParallelUnpack, HashMismatchFoundOnEveryPath) {
  expect_refused(testing::test_wheels() / "wrong-hash" / k_wheel,
                 "demo_pkg/big.py does not match its sha256 in RECORD",
                 "demo_pkg/big.py does not match its sha256 in RECORD");
}

// Refusals that only inflating can show (make_wheels.py, "Mid-stream refusals"): every path
// stops at the member, and leaves nothing behind.
TEST_F(WheelParallelUnpack, ZipBombThatShowsItsSizeOnlyWhileInflatingIsRefused) {
  // Headers and RECORD say 2 MiB; the stream holds 256 MiB of zeros. Nobody inflates more
  // than a piece past the limit.
  const std::string says =
      "member demo_pkg/zeros.bin holds more bytes than its recorded size (2097152)";
  expect_refused_each(testing::test_wheels() / "stream-bomb" / k_wheel,
                      {{parallel(2, 512u << 20), says},
                       {parallel(2, 1 << 20), says},
                       {parallel(1, 0), says},
                       {streaming(), says}});
}

TEST_F(WheelParallelUnpack, MemberShorterThanItsHeadersIsRefused) {
  const std::string says =
      "member demo_pkg/short.bin holds 2097152 bytes but its header and RECORD say 2208890";
  expect_refused_each(testing::test_wheels() / "stream-short" / k_wheel,
                      {{parallel(2, 512u << 20), "member demo_pkg/short.bin"},
                       {parallel(2, 1 << 20), says},
                       {streaming(), "demo_pkg/short.bin"}});
}

TEST_F(WheelParallelUnpack, TruncatedDeflateStreamIsRefused) {
  expect_refused_each(
      testing::test_wheels() / "stream-truncated" / k_wheel,
      {{parallel(2, 512u << 20), "member demo_pkg/cut.bin has a corrupt deflate stream"},
       {parallel(2, 1 << 20), "member demo_pkg/cut.bin ends before its deflate stream does"},
       {streaming(), "demo_pkg/cut.bin"}});
}

TEST_F(WheelParallelUnpack, ExistingFileInStagingIsKept) {
  // A file already in staging is never overwritten, and survives the failed install.
  fs::path staging = m_dir->path() / "taken";
  auto contents = read_wheel(testing::test_wheels() / "mixed" / k_wheel);
  ASSERT_TRUE(contents) << contents.error().message;
  fs::create_directories(staging);
  auto once = install_wheel(*contents, m_venv, staging, parallel(2, 512u << 20));
  ASSERT_TRUE(once) << once.error().message;
  auto before = testing::tree_of(staging);
  auto twice = install_wheel(*contents, m_venv, staging, parallel(2, 512u << 20));
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, ExitCode::error);
  EXPECT_TRUE(testing::tree_of(staging) == before);
}

TEST(WheelZipIndex, ReadsZip64AndPlainDirectories) {
  for (const char* dir : {"zip64", "mixed"}) {
    fs::path wheel = testing::test_wheels() / dir / k_wheel;
    auto map = MappedFile::open(wheel);
    ASSERT_TRUE(map);
    auto entries = detail::read_zip_index(map->bytes());
    ASSERT_TRUE(entries) << dir;
    auto contents = read_wheel(wheel);
    ASSERT_TRUE(contents) << contents.error().message;
    auto match = detail::match_members(*contents, *entries);
    ASSERT_TRUE(match) << dir;
    for (std::size_t i = 0; i < contents->members.size(); ++i) {
      EXPECT_EQ((*entries)[(*match)[i]].name, contents->members[i].name);
      EXPECT_EQ((*entries)[(*match)[i]].size, contents->members[i].size);
    }
  }
}

TEST(WheelZipIndex, DamagedArchivesNeverReadOutOfBounds) {
  // Bounded random damage to the headers of a real wheel: the index is either refused or
  // consistent, and checking the wheel gives a verdict (under ASan: no out-of-bounds read).
  auto good = read_file(testing::test_wheels() / k_wheel, 64u << 20);
  ASSERT_TRUE(good);
  const std::size_t cd = good->rfind("PK\x01\x02");
  std::mt19937 random(12345);
  int verdicts = 0;
  for (int round = 0; round < 300; ++round) {
    std::string data = *good;
    int damage = 1 + static_cast<int>(random() % 4);
    for (int k = 0; k < damage; ++k) {
      // Mostly the central directory and end records; sometimes anywhere.
      std::size_t at =
          random() % 4 == 0 ? random() % data.size() : cd / 2 + random() % (data.size() - cd / 2);
      data[at] = static_cast<char>(random());
    }
    if (random() % 5 == 0) data.resize(random() % data.size());
    auto bytes = std::as_bytes(std::span(data.data(), data.size()));
    if (auto entries = detail::read_zip_index(bytes)) {
      for (const auto& entry : *entries) {
        EXPECT_LE(entry.data_offset + entry.compressed_size, data.size());
      }
    }
    auto contents = read_wheel_bytes(bytes, k_wheel);
    if (contents) {
      (void)check_wheel_bytes(*contents, bytes);
      ++verdicts;
    }
  }
  EXPECT_GT(verdicts, 0);  // some damage lands in data the first phase does not read
}

}  // namespace
}  // namespace venvfix::wheel
