// The ld.so.cache reader against ldconfig itself: the host cache as `ldconfig -p` prints it,
// and caches that ldconfig builds for the test in each of its formats.
#include "venvfix/elf/ld_cache.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <random>

#include "elf/elf_test_support.hpp"

namespace venvfix::elf {
namespace {

using testing::build_shared_object;
using testing::quote;
using testing::run_command;
using testing::SharedObject;

class ElfLdCache : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-elf-cache-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(*dir));
  }
  fs::path path(const std::string& relative) const { return m_dir->path() / relative; }
  // Builds a cache of `dirs` (absolute inside the test directory, which ldconfig takes as its
  // root with -r: it then scans nothing of the host) with ldconfig in `format` ("new",
  // "compat", "old"). Paths in the cache are relative to that root, e.g. "/d/libx.so.1".
  fs::path build_cache(const std::vector<std::string>& dirs, const std::string& format) {
    std::FILE* f = std::fopen(path("ld.so.conf").c_str(), "w");
    EXPECT_NE(f, nullptr);
    for (const std::string& dir : dirs) std::fprintf(f, "%s\n", dir.c_str());
    std::fclose(f);
    const std::string cache = "/ld.so.cache." + format;
    auto result = run_command("ldconfig -X -r " + quote(m_dir->path().string()) + " -c " + format +
                              " -C " + cache + " -f /ld.so.conf");
    EXPECT_EQ(result.status, 0) << result.output;
    return path(cache.substr(1));
  }
  std::optional<TempDir> m_dir;
};

TEST_F(ElfLdCache, HostCacheAgreesWithLdconfigPrint) {
  auto cache = LdCache::load("/etc/ld.so.cache");
  if (!cache) GTEST_SKIP() << cache.error().message;
  auto printed = run_command("ldconfig -p");
  ASSERT_EQ(printed.status, 0) << printed.output;
  // "N libs found in cache `/etc/ld.so.cache'" then "\tNAME (FLAGS[, hwcap: …]) => PATH".
  std::size_t count = 0;
  std::map<std::string, std::string> first_x86_64;
  for (std::string_view line : split(printed.output, '\n')) {
    if (line.find("libs found in cache") != std::string_view::npos) {
      count = std::stoul(std::string(trim(line).substr(0, trim(line).find(' '))));
      continue;
    }
    line = trim(line);
    auto open = line.find(" (");
    auto arrow = line.find(") => ");
    if (open == std::string_view::npos || arrow == std::string_view::npos) continue;
    std::string name(line.substr(0, open));
    std::string_view flags = line.substr(open + 2, arrow - open - 2);
    if (flags == "libc6,x86-64") first_x86_64.emplace(name, std::string(line.substr(arrow + 5)));
  }
  EXPECT_EQ(cache->size(), count);
  ASSERT_FALSE(first_x86_64.empty());
  for (const auto& [name, path] : first_x86_64) {
    auto found = cache->find(name, ElfClass::elf64, k_machine_x86_64);
    ASSERT_TRUE(found) << name;
    EXPECT_EQ(*found, path) << name;
    // No 64-bit x86 entry is offered to a 32-bit lookup.
    auto as32 = cache->find(name, ElfClass::elf32, k_machine_386);
    if (as32) {
      EXPECT_NE(*as32, path) << name;
    }
  }
}

TEST_F(ElfLdCache, ReadsEveryFormatLdconfigWrites) {
  build_shared_object(path("d/libvfa.so.1"), SharedObject("libvfa.so.1"));
  build_shared_object(path("d/libvfb.so.12"), SharedObject("libvfb.so.12"));
  build_shared_object(path("d32/libvfa.so.1"), SharedObject("libvfa.so.1").flags("-m32 -nostdlib"));
  for (const std::string format : {"new", "compat", "old"}) {
    const fs::path file = build_cache({"/d", "/d32"}, format);
    auto cache = LdCache::load(file);
    ASSERT_TRUE(cache) << format << ": " << cache.error().message;
    EXPECT_EQ(cache->find("libvfa.so.1", ElfClass::elf64, k_machine_x86_64), "/d/libvfa.so.1")
        << format;
    EXPECT_EQ(cache->find("libvfb.so.12", ElfClass::elf64, k_machine_x86_64), "/d/libvfb.so.12")
        << format;
    EXPECT_EQ(cache->find("libvfa.so.1", ElfClass::elf32, k_machine_386), "/d32/libvfa.so.1")
        << format;
    EXPECT_FALSE(cache->find("libvfb.so.1", ElfClass::elf64, k_machine_x86_64)) << format;
    EXPECT_FALSE(cache->find("libvfb.so.12", ElfClass::elf32, k_machine_386)) << format;
  }
}

TEST_F(ElfLdCache, GlibcHwcapsEntriesWinWhenSupported) {
  build_shared_object(path("h/libvfh.so.1"), SharedObject("libvfh.so.1"));
  build_shared_object(path("h/glibc-hwcaps/x86-64-v2/libvfh.so.1"), SharedObject("libvfh.so.1"));
  auto cache = LdCache::load(build_cache({"/h"}, "new"));
  ASSERT_TRUE(cache) << cache.error().message;
  const std::vector<std::string> v2 = {"x86-64-v3", "x86-64-v2"};
  EXPECT_EQ(cache->find("libvfh.so.1", ElfClass::elf64, k_machine_x86_64, v2),
            "/h/glibc-hwcaps/x86-64-v2/libvfh.so.1");
  EXPECT_EQ(cache->find("libvfh.so.1", ElfClass::elf64, k_machine_x86_64), "/h/libvfh.so.1");
  bool saw_hwcaps = false;
  for (const auto& entry : cache->entries()) {
    if (entry.is_hwcaps_entry) {
      saw_hwcaps = true;
      EXPECT_EQ(entry.glibc_hwcaps, "x86-64-v2");
    }
  }
  EXPECT_TRUE(saw_hwcaps);
}

TEST_F(ElfLdCache, NamesCompareNumerically) {
  EXPECT_LT(cache_name_compare("libfoo.so.2", "libfoo.so.10"), 0);
  EXPECT_GT(cache_name_compare("libfoo.so.10", "libfoo.so.9"), 0);
  EXPECT_EQ(cache_name_compare("libfoo.so.010", "libfoo.so.10"), 0);
  EXPECT_GT(cache_name_compare("libfoo.so.1", "libfoo.so."), 0);
  EXPECT_LT(cache_name_compare("libc.so.6", "libcudnn.so.9"), 0);
  EXPECT_EQ(cache_name_compare("", ""), 0);
}

TEST_F(ElfLdCache, MalformedCachesAreErrorsNamingTheFile) {
  auto parse = [](std::string_view text) {
    return LdCache::parse(std::as_bytes(std::span(text.data(), text.size())), "test.cache");
  };
  for (std::string_view text :
       {std::string_view(""), std::string_view("garbage"), std::string_view("glibc-ld.so.cache1.1"),
        std::string_view("ld.so-1.7.0")}) {
    auto cache = parse(text);
    ASSERT_FALSE(cache) << text;
    EXPECT_NE(cache.error().message.find("test.cache"), std::string::npos);
  }
  // A real cache whose entry count is absurd, or whose string offsets point outside it.
  build_shared_object(path("d/libvfa.so.1"), SharedObject("libvfa.so.1"));
  auto text = read_file(build_cache({"/d"}, "new"));
  ASSERT_TRUE(text);
  std::string huge = *text;
  const std::uint32_t count = 0xfffffff0;
  std::memcpy(huge.data() + 20, &count, 4);
  EXPECT_FALSE(parse(huge));
  std::string bad_string = *text;
  const std::uint32_t offset = 0x7ffffff0;
  std::memcpy(bad_string.data() + 48 + 4, &offset, 4);
  auto cache = parse(bad_string);
  ASSERT_FALSE(cache);
  EXPECT_NE(cache.error().message.find("outside"), std::string::npos);
}

TEST_F(ElfLdCache, RandomMutationsNeverCrash) {
  build_shared_object(path("d/libvfa.so.1"), SharedObject("libvfa.so.1"));
  build_shared_object(path("h/glibc-hwcaps/x86-64-v3/libvfa.so.1"), SharedObject("libvfa.so.1"));
  auto text = read_file(build_cache({"/d", "/h"}, "compat"));
  ASSERT_TRUE(text);
  std::mt19937 random(7);
  const std::vector<std::string> hwcaps = {"x86-64-v3", "x86-64-v2"};
  for (int round = 0; round < 300; ++round) {
    std::string bytes = *text;
    for (int i = 0; i < 1 + static_cast<int>(random() % 6); ++i) {
      bytes[random() % bytes.size()] = static_cast<char>(random() & 0xff);
    }
    if (round % 4 == 0) bytes.resize(random() % bytes.size());
    auto cache = LdCache::parse(std::as_bytes(std::span(bytes.data(), bytes.size())), "m.cache");
    if (!cache) continue;
    for (const auto& entry : cache->entries()) {
      (void)cache->find(entry.soname, ElfClass::elf64, k_machine_x86_64, hwcaps);
    }
  }
}

}  // namespace
}  // namespace venvfix::elf
