#include "venvfix/dist/file_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <gtest/gtest.h>

#include "env/test_support.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix::dist {
namespace {

using test_support::write_text;

// A venv whose one distribution "pkg" records three files; the test then damages them.
class DistFileCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-check-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(*dir));
    root = m_dir->path() / "venv";
    ASSERT_TRUE(test_support::copy_of_template_venv(root));
    auto venv = env::open_venv_at(root);
    ASSERT_TRUE(venv);
    m_venv = std::move(*venv);
    site = m_venv.purelib;
    files = {{"pkg/lib/libone.so.1", std::string(100000, 'a')},
             {"pkg/lib/libtwo.so.2", std::string(5000, 'b')},
             {"pkg/__init__.py", "print('hi')\n"},
             {"../../../bin/pkg-tool", "#!/bin/sh\n"}};
    std::string record;
    for (const auto& [path, content] : files) {
      write_text(site / path, content);
      record += fmt::format("{},sha256={},{}\n", path, to_base64url_nopad(sha256(content)),
                            content.size());
    }
    record += "pkg-1.0.dist-info/RECORD,,\n";
    write_text(site / "pkg-1.0.dist-info" / "METADATA", "Name: pkg\nVersion: 1.0\n");
    write_text(site / "pkg-1.0.dist-info" / "RECORD", record);
    // Hashes are cached only for files older than the filesystem clock's tick: the caches of
    // these tests read a clock 10 s after the venv was written instead of waiting for it.
    m_later = realtime_ns() + 10'000'000'000;
  }

  // The venv's hash cache, reading the clock 10 s after SetUp.
  HashCache load_cache() {
    HashCache cache = HashCache::load_for(m_venv.state_dir());
    cache.set_clock([at = m_later] { return at; });
    return cache;
  }

  Inventory inventory() {
    auto inventory = read_inventory(m_venv);
    EXPECT_TRUE(inventory);
    return std::move(*inventory);
  }

  static const FileCheck& find(const FileCheckReport& report, std::string_view record_path) {
    for (const FileCheck& check : report.checks) {
      if (check.record_path == record_path) return check;
    }
    throw std::runtime_error("no check for " + std::string(record_path));
  }

  std::optional<TempDir> m_dir;
  std::int64_t m_later = 0;
  env::Venv m_venv;
  fs::path root;
  fs::path site;
  std::vector<std::pair<std::string, std::string>> files;
};

TEST_F(DistFileCheck, HealthyFilesAreOk) {
  Inventory inv = inventory();
  auto requests = all_entries(inv);
  ASSERT_EQ(requests.size(), 5u);
  FileCheckReport report = check_files(inv, requests, HashPolicy::full, {}, nullptr);
  ASSERT_EQ(report.checks.size(), 5u);
  for (const FileCheck& check : report.checks) {
    EXPECT_EQ(check.state, FileState::ok) << check.path << " " << to_string(check.state);
  }
  EXPECT_EQ(report.files_hashed, 4u);  // RECORD itself has no hash
  EXPECT_EQ(report.bytes_hashed, 100000u + 5000u + 12u + 10u);
  EXPECT_EQ(fs::path(find(report, "../../../bin/pkg-tool").path), root / "bin" / "pkg-tool");
  EXPECT_EQ(find(report, "pkg/lib/libone.so.1").actual_size, 100000u);
  ASSERT_TRUE(find(report, "pkg/lib/libone.so.1").actual_sha256);
}

TEST_F(DistFileCheck, DamageIsReportedPerState) {
  fs::remove(site / "pkg/lib/libone.so.1");                          // missing
  write_text(site / "pkg/lib/libtwo.so.2", std::string(5000, 'c'));  // same size, new bytes
  write_text(site / "pkg/__init__.py", "longer than before\n");      // size mismatch
  fs::remove(root / "bin/pkg-tool");
  fs::create_directories(root / "bin/pkg-tool");  // not a regular file
  Inventory inv = inventory();
  auto requests = all_entries(inv);

  FileCheckReport size_only = check_files(inv, requests, HashPolicy::size_only, {}, nullptr);
  EXPECT_EQ(find(size_only, "pkg/lib/libone.so.1").state, FileState::missing);
  EXPECT_EQ(find(size_only, "pkg/lib/libone.so.1").actual_size, 0u);
  EXPECT_EQ(find(size_only, "pkg/lib/libtwo.so.2").state, FileState::ok);  // not hashed
  EXPECT_EQ(find(size_only, "pkg/__init__.py").state, FileState::size_mismatch);
  EXPECT_EQ(find(size_only, "pkg/__init__.py").actual_size, 19u);
  EXPECT_EQ(find(size_only, "../../../bin/pkg-tool").state, FileState::not_regular);
  EXPECT_EQ(size_only.files_hashed, 0u);

  // The libraries a target loads are always hashed, whatever the policy.
  std::unordered_set<std::string> always{(site / "pkg/lib/libtwo.so.2").string()};
  FileCheckReport targeted = check_files(inv, requests, HashPolicy::size_only, always, nullptr);
  EXPECT_EQ(find(targeted, "pkg/lib/libtwo.so.2").state, FileState::hash_mismatch);
  EXPECT_EQ(*find(targeted, "pkg/lib/libtwo.so.2").actual_sha256, sha256(std::string(5000, 'c')));
  EXPECT_EQ(targeted.files_hashed, 1u);

  FileCheckReport full = check_files(inv, requests, HashPolicy::full, {}, nullptr);
  EXPECT_EQ(find(full, "pkg/lib/libtwo.so.2").state, FileState::hash_mismatch);
}

TEST_F(DistFileCheck, DanglingSymlinkIsMissingAndSymlinkToGoodFileIsOk) {
  fs::rename(site / "pkg/lib/libone.so.1", site / "pkg/lib/real");
  fs::create_symlink("real", site / "pkg/lib/libone.so.1");
  fs::create_symlink("nowhere", site / "pkg/lib/dangling");
  fs::remove(site / "pkg/lib/libtwo.so.2");
  fs::create_symlink("nowhere", site / "pkg/lib/libtwo.so.2");
  Inventory inv = inventory();
  FileCheckReport report = check_files(inv, all_entries(inv), HashPolicy::full, {}, nullptr);
  EXPECT_EQ(find(report, "pkg/lib/libone.so.1").state, FileState::ok);
  EXPECT_EQ(find(report, "pkg/lib/libtwo.so.2").state, FileState::missing);
}

TEST_F(DistFileCheck, SharedPathIsReadOnceAndJudgedPerRecord) {
  // A second distribution lists the same library with other bytes' hash (cu12 vs cu13).
  write_text(site / "other-2.0.dist-info" / "METADATA", "Name: other\nVersion: 2.0\n");
  write_text(site / "other-2.0.dist-info" / "RECORD",
             fmt::format("pkg/lib/libone.so.1,sha256={},100000\n",
                         to_base64url_nopad(sha256(std::string(100000, 'z')))));
  Inventory inv = inventory();
  ASSERT_EQ(inv.owners_of(site / "pkg/lib/libone.so.1").size(), 2u);
  FileCheckReport report = check_files(inv, all_entries(inv), HashPolicy::full, {}, nullptr);
  EXPECT_EQ(report.files_hashed, 4u);
  std::size_t ok = 0;
  std::size_t clobbered = 0;
  for (const FileCheck& check : report.checks) {
    if (check.record_path != "pkg/lib/libone.so.1") continue;
    if (check.state == FileState::ok) ++ok;
    if (check.state == FileState::hash_mismatch) {
      ++clobbered;
      EXPECT_EQ(inv.distributions[check.dist].name, "other");
    }
  }
  EXPECT_EQ(ok, 1u);
  EXPECT_EQ(clobbered, 1u);
}

TEST_F(DistFileCheck, CacheAnswersTheSecondRunWithoutReading) {
  Inventory inv = inventory();
  auto requests = all_entries(inv);
  {
    HashCache cache = load_cache();
    EXPECT_EQ(cache.size(), 0u);
    FileCheckReport first = check_files(inv, requests, HashPolicy::full, {}, &cache);
    EXPECT_EQ(first.files_hashed, 4u);
    EXPECT_EQ(first.cache_hits, 0u);
    EXPECT_TRUE(cache.dirty());
    ASSERT_TRUE(cache.save());
    ASSERT_TRUE(fs::exists(root / ".venvfix" / "hash-cache-v1"));
  }
  auto saved_identity = file_identity(root / ".venvfix" / "hash-cache-v1");
  ASSERT_TRUE(saved_identity);

  // The second run reads no byte of any file: every hash comes from the cache. (Making a file
  // unreadable to prove it would change its ctime, hence its identity, and rightly force a
  // rehash; the counters are the proof instead.)
  HashCache cache = load_cache();
  EXPECT_EQ(cache.size(), 4u);
  FileCheckReport second = check_files(inv, requests, HashPolicy::full, {}, &cache);
  EXPECT_EQ(second.files_hashed, 0u);
  EXPECT_EQ(second.bytes_hashed, 0u);
  EXPECT_EQ(second.cache_hits, 4u);
  EXPECT_EQ(find(second, "pkg/lib/libone.so.1").state, FileState::ok);
  // Nothing new: save() must not write.
  EXPECT_FALSE(cache.dirty());
  ASSERT_TRUE(cache.save());
  auto after = file_identity(root / ".venvfix" / "hash-cache-v1");
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, *saved_identity);
}

TEST_F(DistFileCheck, ChangedFileWithSameSizeIsRehashed) {
  Inventory inv = inventory();
  auto requests = all_entries(inv);
  HashCache cache = load_cache();
  (void)check_files(inv, requests, HashPolicy::full, {}, &cache);
  ASSERT_TRUE(cache.save());

  // Same size, new bytes, written in place (same inode): mtime and ctime move. The mtime is
  // set one second on, so that the identity changes even within one kernel clock tick.
  fs::path two = site / "pkg/lib/libtwo.so.2";
  auto old = file_identity(two);
  ASSERT_TRUE(old);
  write_text(two, std::string(5000, 'x'));
  struct timespec times[2] = {{0, UTIME_OMIT},
                              {static_cast<time_t>(old->mtime_ns / 1'000'000'000 + 1),
                               static_cast<long>(old->mtime_ns % 1'000'000'000)}};
  ASSERT_EQ(::utimensat(AT_FDCWD, two.c_str(), times, 0), 0);
  auto rewritten = file_identity(two);
  ASSERT_TRUE(rewritten);
  HashCache reloaded = HashCache::load_for(m_venv.state_dir());
  // The check starts 50 ms after the rewrite: within the racy margin.
  reloaded.set_clock([at = rewritten->ctime_ns + 50'000'000] { return at; });
  FileCheckReport report = check_files(inv, requests, HashPolicy::full, {}, &reloaded);
  EXPECT_EQ(report.files_hashed, 1u);
  EXPECT_EQ(report.bytes_hashed, 5000u);
  EXPECT_EQ(report.cache_hits, 3u);
  EXPECT_EQ(find(report, "pkg/lib/libtwo.so.2").state, FileState::hash_mismatch);
  // Just written: too recent to trust its timestamps, so not remembered yet.
  EXPECT_FALSE(reloaded.dirty());
}

TEST_F(DistFileCheck, CorruptCacheIsIgnoredAndRebuilt) {
  Inventory inv = inventory();
  auto requests = all_entries(inv);
  HashCache cache = load_cache();
  (void)check_files(inv, requests, HashPolicy::full, {}, &cache);
  ASSERT_TRUE(cache.save());
  const fs::path file = root / ".venvfix" / "hash-cache-v1";
  auto bytes = read_file(file);
  ASSERT_TRUE(bytes);

  std::vector<std::string> corruptions = {"", "garbage", bytes->substr(0, bytes->size() - 1),
                                          bytes->substr(0, 30), std::string(bytes->size(), '\0')};
  std::string flipped = *bytes;
  flipped[40] = static_cast<char>(flipped[40] ^ 1);
  corruptions.push_back(flipped);
  std::string other_version = *bytes;
  other_version[8] = 9;
  corruptions.push_back(other_version);
  std::string huge_count = *bytes;
  for (int i = 16; i < 24; ++i) huge_count[static_cast<std::size_t>(i)] = '\xff';
  corruptions.push_back(huge_count);
  for (const std::string& corrupt : corruptions) {
    write_text(file, corrupt);
    HashCache loaded = HashCache::load(file);
    loaded.set_clock([at = m_later] { return at; });
    EXPECT_TRUE(loaded.was_corrupt()) << corrupt.size();
    EXPECT_EQ(loaded.size(), 0u);
    FileCheckReport report = check_files(inv, requests, HashPolicy::full, {}, &loaded);
    EXPECT_EQ(report.files_hashed, 4u);
    EXPECT_EQ(find(report, "pkg/lib/libone.so.1").state, FileState::ok);
    ASSERT_TRUE(loaded.save());
    EXPECT_EQ(HashCache::load(file).size(), 4u);
  }
}

TEST_F(DistFileCheck, ReadOnlyVenvSkipsTheSaveSilently) {
  Inventory inv = inventory();
  HashCache cache = load_cache();
  (void)check_files(inv, all_entries(inv), HashPolicy::full, {}, &cache);
  ASSERT_TRUE(cache.dirty());
  // The venv root is made read-only; root ignores permission bits, so the save then runs in a
  // child that has given up root (as a user reading a system-wide venv would).
  ::chmod(m_dir->path().c_str(), 0755);
  ::chmod(root.c_str(), 0555);
  int code = -1;
  if (::geteuid() == 0) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(10);
      auto status = cache.save();
      ::_exit(!status ? 11 : fs::exists(root / ".venvfix") ? 12 : 0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  } else {
    auto status = cache.save();
    code = !status ? 11 : fs::exists(root / ".venvfix") ? 12 : 0;
  }
  ::chmod(root.c_str(), 0755);
  EXPECT_EQ(code, 0) << "10: cannot drop root, 11: save failed, 12: it wrote";
  EXPECT_FALSE(fs::exists(root / ".venvfix"));
}

// The racy rule through check_files, with the clock the cache is given: a file is remembered
// only once the check starts more than the margin after its last change.
TEST_F(DistFileCheck, RecentFilesAreNotRememberedUntilTheClockPassesTheMargin) {
  Inventory inv = inventory();
  auto requests = all_entries(inv);
  std::int64_t newest = 0;
  for (const auto& [path, content] : files) {
    auto id = file_identity(site / path);
    ASSERT_TRUE(id);
    newest = std::max({newest, id->mtime_ns, id->ctime_ns});
  }
  HashCache soon = HashCache::load_for(m_venv.state_dir());
  soon.set_clock([at = newest + 10'000'000] { return at; });  // 10 ms later
  (void)check_files(inv, requests, HashPolicy::full, {}, &soon);
  EXPECT_FALSE(soon.dirty());
  EXPECT_EQ(soon.size(), 0u);
  HashCache later = HashCache::load_for(m_venv.state_dir());
  later.set_clock([at = newest + 200'000'000] { return at; });  // 200 ms later
  (void)check_files(inv, requests, HashPolicy::full, {}, &later);
  EXPECT_TRUE(later.dirty());
  EXPECT_EQ(later.size(), 4u);
}

TEST(DistHashCache, EncodeDecodeRoundTrip) {
  HashCache cache("/nonexistent/hash-cache-v1");
  FileIdentity id;
  id.device = 7;
  id.inode = 1234567890123ull;
  id.size = 42;
  id.mtime_ns = 1'700'000'000'123'456'789;
  id.ctime_ns = 1'700'000'000'223'456'789;
  EXPECT_TRUE(cache.remember(id, sha256("abc"), id.ctime_ns + 1'000'000'000));
  EXPECT_FALSE(cache.remember(FileIdentity{8, 1, 1, id.mtime_ns, id.ctime_ns, 0}, sha256("x"),
                              id.ctime_ns + 1000));  // racy: changed just before the hash
  HashCache other("/nonexistent/hash-cache-v1");
  ASSERT_TRUE(other.decode(cache.encode()));
  EXPECT_EQ(other.size(), 1u);
  EXPECT_EQ(other.lookup(id), sha256("abc"));
  id.ctime_ns += 1;
  EXPECT_FALSE(other.lookup(id));
}

// The CRC-32 docs/inventory.md names (reflected polynomial 0xEDB88320, zlib's), bit by bit:
// the file's trailer is checked against this, not against the function that wrote it.
std::uint32_t reference_crc32(std::string_view bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (char c : bytes) {
    crc ^= static_cast<std::uint8_t>(c);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::uint32_t little_endian_u32(std::string_view bytes) {
  std::uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | static_cast<std::uint8_t>(bytes[i]);
  return value;
}

// Version 2 ends with a CRC-32 of everything before it. A version-1 file (the same records and
// a SHA-256 at the end) is still read, and marked to be written again as version 2.
TEST(DistHashCache, VersionTwoEndsWithACrcAndAVersionOneFileIsReadAndRewritten) {
  EXPECT_EQ(reference_crc32("123456789"), 0xCBF43926u);  // CRC-32's published check value
  HashCache cache("/nonexistent/hash-cache-v1");
  FileIdentity id{7, 99, 5, 1'700'000'000'000'000'000, 1'700'000'000'000'000'000, S_IFREG | 0644};
  ASSERT_TRUE(cache.seed(id, sha256("hello")));
  const std::string encoded = cache.encode();
  ASSERT_EQ(encoded.size(), 24u + 72u + 4u);
  EXPECT_EQ(little_endian_u32(std::string_view(encoded).substr(8, 4)), 2u);
  const std::string_view body = std::string_view(encoded).substr(0, encoded.size() - 4);
  EXPECT_EQ(little_endian_u32(std::string_view(encoded).substr(body.size())),
            reference_crc32(body));

  std::string version_one(body);
  version_one[8] = 1;
  const Sha256Digest checksum = sha256(version_one);
  version_one.append(reinterpret_cast<const char*>(checksum.data()), checksum.size());
  HashCache old("/nonexistent/hash-cache-v1");
  ASSERT_TRUE(old.decode(version_one));
  EXPECT_EQ(old.lookup(id), sha256("hello"));
  EXPECT_TRUE(old.dirty());  // the next save writes version 2
  EXPECT_EQ(old.encode(), encoded);

  version_one.back() = static_cast<char>(version_one.back() ^ 1);
  HashCache damaged("/nonexistent/hash-cache-v1");
  EXPECT_FALSE(damaged.decode(version_one));
  HashCache current("/nonexistent/hash-cache-v1");
  ASSERT_TRUE(current.decode(encoded));
  EXPECT_FALSE(current.dirty());
}

// Apply seeds the digests staging computed: no racy rule (it wrote the bytes itself), regular
// files only, saved like any other entry.
TEST(DistHashCache, SeedTakesJustWrittenFilesAndOnlyRegularOnes) {
  HashCache cache("/nonexistent/hash-cache-v1");
  cache.set_clock([] { return std::int64_t{1'700'000'000'000'000'000}; });
  FileIdentity id{7, 99, 5, cache.now_ns(), cache.now_ns(), S_IFREG | 0644};
  EXPECT_FALSE(cache.remember(id, sha256("hello"), cache.now_ns()));  // racy for remember()
  EXPECT_TRUE(cache.seed(id, sha256("hello")));
  EXPECT_TRUE(cache.dirty());
  FileIdentity link = id;
  link.inode = 100;
  link.mode = S_IFLNK | 0777;
  EXPECT_FALSE(cache.seed(link, sha256("x")));
  HashCache other("/nonexistent/hash-cache-v1");
  ASSERT_TRUE(other.decode(cache.encode()));
  EXPECT_EQ(other.size(), 1u);
  EXPECT_EQ(other.lookup(id), sha256("hello"));
}

}  // namespace
}  // namespace venvfix::dist
