// ELF reading: real objects built by the toolchain, and malformed files made from them.
#include "venvfix/elf/elf_file.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

#include "elf/elf_test_support.hpp"

namespace venvfix::elf {
namespace {

using testing::build_shared_object;
using testing::SharedObject;
using testing::Tags;

std::vector<std::byte> bytes_of(const fs::path& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text);
  std::vector<std::byte> bytes(text->size());
  std::memcpy(bytes.data(), text->data(), text->size());
  return bytes;
}

void write_bytes(const fs::path& path, std::span<const std::byte> bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  if (!bytes.empty()) std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

template <typename T>
T get(const std::vector<std::byte>& b, std::size_t at) {
  T v{};
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}
template <typename T>
void put(std::vector<std::byte>& b, std::size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}

// The file offset of the first dynamic entry with `tag` in a little-endian ELF64 image.
std::optional<std::size_t> dynamic_entry(const std::vector<std::byte>& b, std::int64_t tag) {
  const auto phoff = get<std::uint64_t>(b, 32);
  const auto phnum = get<std::uint16_t>(b, 56);
  for (std::size_t i = 0; i < phnum; ++i) {
    const std::size_t ph = phoff + i * 56;
    if (get<std::uint32_t>(b, ph) != 2 /*PT_DYNAMIC*/) continue;
    const auto offset = get<std::uint64_t>(b, ph + 8);
    const auto size = get<std::uint64_t>(b, ph + 32);
    for (std::size_t at = offset; at + 16 <= offset + size; at += 16) {
      if (get<std::int64_t>(b, at) == tag) return at;
    }
  }
  return std::nullopt;
}

class ElfFile : public ::testing::Test {
 protected:
  // The objects every test reads are built once for the suite.
  static void SetUpTestSuite() {
    auto dir = TempDir::create("venvfix-elf-file-");
    ASSERT_TRUE(dir);
    s_dir = new TempDir(std::move(*dir));
    build_shared_object(path("dep/libdep.so.2"), SharedObject("libdep.so.2"));
    build_shared_object(path("libsample.so.1"),
                        SharedObject("libsample.so.1")
                            .needs(path("dep/libdep.so.2"))
                            .with_rpath({"$ORIGIN/../../nvidia/cudnn/lib", "", "/opt/x"}));
  }
  static void TearDownTestSuite() {
    delete s_dir;
    s_dir = nullptr;
  }
  static fs::path path(const std::string& relative) { return s_dir->path() / relative; }
  // Writes a modified copy of libsample.so.1 and reads it.
  Result<std::optional<ElfInfo>> read_modified(
      const std::function<void(std::vector<std::byte>&)>& modify) {
    std::vector<std::byte> bytes = bytes_of(path("libsample.so.1"));
    modify(bytes);
    const fs::path out = path("modified.so");
    write_bytes(out, bytes);
    return read_elf(out);
  }
  static TempDir* s_dir;
};

TempDir* ElfFile::s_dir = nullptr;

TEST_F(ElfFile, ReadsTheDynamicFactsOfARealObject) {
  auto info = read_elf(path("libsample.so.1"));
  ASSERT_TRUE(info) << info.error().message;
  ASSERT_TRUE(info->has_value());
  const ElfInfo& elf = **info;
  EXPECT_EQ(elf.elf_class, ElfClass::elf64);
  EXPECT_EQ(elf.machine, k_machine_x86_64);
  EXPECT_EQ(elf.data_encoding, k_data_lsb);
  EXPECT_EQ(elf.kind, ElfKind::shared);
  EXPECT_EQ(elf.soname, "libsample.so.1");
  EXPECT_EQ(elf.needed, (std::vector<std::string>{"libdep.so.2", "libc.so.6"}));
  EXPECT_TRUE(elf.has_rpath);
  EXPECT_FALSE(elf.has_runpath);
  EXPECT_EQ(elf.rpath, (std::vector<std::string>{"$ORIGIN/../../nvidia/cudnn/lib", "", "/opt/x"}));
  EXPECT_TRUE(elf.runpath.empty());
  EXPECT_EQ(elf.effective_rpath(), elf.rpath);
  EXPECT_FALSE(elf.nodeflib);
  EXPECT_TRUE(elf.interpreter.empty());
  EXPECT_TRUE(has_elf_magic(path("libsample.so.1")));
}

TEST_F(ElfFile, RunpathHidesRpathAndPatchelfForceRpathRestoresIt) {
  build_shared_object(path("librun.so"),
                      SharedObject("librun.so").with_rpath({"/r1", "/r2"}, Tags::runpath));
  auto info = read_elf(path("librun.so"));
  ASSERT_TRUE(info && info->has_value());
  EXPECT_TRUE((*info)->has_runpath);
  EXPECT_EQ((*info)->runpath, (std::vector<std::string>{"/r1", "/r2"}));
  auto forced = testing::run_command("patchelf --force-rpath --set-rpath '$ORIGIN' " +
                                     testing::quote(path("librun.so").string()));
  ASSERT_EQ(forced.status, 0) << forced.output;
  info = read_elf(path("librun.so"));
  ASSERT_TRUE(info && info->has_value());
  EXPECT_FALSE((*info)->has_runpath);
  EXPECT_EQ((*info)->rpath, (std::vector<std::string>{"$ORIGIN"}));
}

TEST_F(ElfFile, ReadsA32BitObjectAnExecutableAndARelocatable) {
  build_shared_object(path("lib32.so"), SharedObject("lib32.so").flags("-m32 -nostdlib"));
  auto info = read_elf(path("lib32.so"));
  ASSERT_TRUE(info && info->has_value()) << (info ? "" : info.error().message);
  EXPECT_EQ((*info)->elf_class, ElfClass::elf32);
  EXPECT_EQ((*info)->machine, k_machine_386);

  const fs::path program = path("prog");
  auto built = testing::run_command("printf 'int main(void){return 0;}' | cc -x c - -o " +
                                    testing::quote(program.string()));
  ASSERT_EQ(built.status, 0) << built.output;
  info = read_elf(program);
  ASSERT_TRUE(info && info->has_value());
  EXPECT_EQ((*info)->kind, ElfKind::executable);  // PIE: ET_DYN with DF_1_PIE
  EXPECT_EQ((*info)->interpreter, testing::host_interpreter_path());

  info = read_elf(testing::compiled_object(""));
  ASSERT_TRUE(info && info->has_value());
  EXPECT_EQ((*info)->kind, ElfKind::relocatable);
  EXPECT_FALSE((*info)->has_dynamic);
}

TEST_F(ElfFile, NonElfFilesAreNotErrors) {
  write_bytes(path("empty"), {});
  const std::byte text[] = {std::byte{'a'}, std::byte{'b'}, std::byte{'c'}, std::byte{'d'},
                            std::byte{'e'}};
  write_bytes(path("text"), text);
  const std::byte short_magic[] = {std::byte{0x7f}, std::byte{'E'}, std::byte{'L'}};
  write_bytes(path("short"), short_magic);
  for (const char* name : {"empty", "text", "short"}) {
    auto info = read_elf(path(name));
    ASSERT_TRUE(info) << name << ": " << info.error().message;
    EXPECT_FALSE(info->has_value()) << name;
    EXPECT_FALSE(has_elf_magic(path(name))) << name;
  }
}

TEST_F(ElfFile, DirectoriesAndMissingFilesAreErrorsNamingThePath) {
  fs::create_directories(path("adir.so"));
  auto info = read_elf(path("adir.so"));
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().message.find(path("adir.so").string()), std::string::npos);
  info = read_elf(path("missing.so"));
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().message.find("missing.so"), std::string::npos);
  EXPECT_FALSE(has_elf_magic(path("missing.so")));
}

TEST_F(ElfFile, TruncatedFilesAreErrors) {
  const std::vector<std::byte> whole = bytes_of(path("libsample.so.1"));
  for (std::size_t size : {std::size_t{4}, std::size_t{20}, std::size_t{63}, std::size_t{64},
                           std::size_t{200}, whole.size() / 4}) {
    const fs::path out = path("truncated.so");
    write_bytes(out, std::span(whole).first(size));
    auto info = read_elf(out);
    ASSERT_FALSE(info) << "size " << size;
    EXPECT_NE(info.error().message.find("truncated.so"), std::string::npos);
    EXPECT_NE(info.error().message.find("corrupt ELF file"), std::string::npos)
        << info.error().message;
  }
}

TEST_F(ElfFile, HostileHeadersAndIndexesAreErrors) {
  // Program header table far beyond the file.
  auto info = read_modified([](auto& b) { put<std::uint64_t>(b, 32, 0xffffffffffff0000ULL); });
  EXPECT_FALSE(info);
  // A huge program header count.
  info = read_modified([](auto& b) { put<std::uint16_t>(b, 56, 0xfff0); });
  EXPECT_FALSE(info);
  // A huge section header count and offset (the reader does not need sections).
  info = read_modified([](auto& b) {
    put<std::uint16_t>(b, 60, 0xffff);
    put<std::uint64_t>(b, 40, 0x7fffffffffffULL);
  });
  if (!info) {
    EXPECT_NE(info.error().message.find("modified.so"), std::string::npos);
  }
  // A DT_NEEDED string index outside the string table.
  info = read_modified([](auto& b) {
    auto at = dynamic_entry(b, 1 /*DT_NEEDED*/);
    ASSERT_TRUE(at);
    put<std::uint64_t>(b, *at + 8, 0x7fffffff);
  });
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().message.find("DT_NEEDED string index 2147483647 is outside"),
            std::string::npos)
      << info.error().message;
  // DT_STRTAB pointing at no loaded segment.
  info = read_modified([](auto& b) {
    auto at = dynamic_entry(b, 5 /*DT_STRTAB*/);
    ASSERT_TRUE(at);
    put<std::uint64_t>(b, *at + 8, 0x7ff000000000ULL);
  });
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().message.find("DT_STRTAB"), std::string::npos);
  // An invalid class byte.
  info = read_modified([](auto& b) { b[4] = std::byte{9}; });
  EXPECT_FALSE(info);
}

// A bounded randomized check: mutated copies of a real object never crash the reader (run
// under AddressSanitizer in CI) and every failure names the input.
TEST_F(ElfFile, RandomMutationsNeverCrash) {
  const std::vector<std::byte> whole = bytes_of(path("libsample.so.1"));
  std::mt19937 random(20240531);
  for (int round = 0; round < 400; ++round) {
    std::vector<std::byte> bytes = whole;
    const int flips = 1 + static_cast<int>(random() % 8);
    for (int i = 0; i < flips; ++i) {
      // Mostly the headers and the dynamic section, where the reader looks.
      const std::size_t limit =
          (random() % 2 == 0) ? std::min<std::size_t>(bytes.size(), 1024) : bytes.size();
      bytes[random() % limit] = static_cast<std::byte>(random() & 0xff);
    }
    if (round % 5 == 0) bytes.resize(random() % bytes.size());
    auto info = parse_elf(bytes, "mutated.so");
    if (!info) {
      EXPECT_NE(info.error().message.find("mutated.so"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace venvfix::elf

namespace venvfix::elf {
namespace {

// Every shared object of the host's library directory (up to 400) reads without error, the
// way doctor reads a torch-sized venv. Prints the time taken (not asserted: not a timed test).
TEST(ElfFileCorpus, ReadsTheHostsLibrariesWithoutErrors) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"}) {
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.find(".so") != std::string::npos && it->is_regular_file(ec)) {
        files.push_back(it->path());
      }
      if (files.size() >= 400) break;
    }
  }
  if (files.empty()) GTEST_SKIP() << "no host libraries";
  const auto start = std::chrono::steady_clock::now();
  std::size_t elf_count = 0;
  for (const fs::path& file : files) {
    auto info = read_elf(file);
    ASSERT_TRUE(info) << info.error().message;
    if (info->has_value()) ++elf_count;
  }
  const auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start);
  std::printf("read %zu files (%zu ELF) in %.1f ms\n", files.size(), elf_count,
              elapsed.count() * 1000);
  EXPECT_GT(elf_count, 0u);
}

}  // namespace
}  // namespace venvfix::elf
