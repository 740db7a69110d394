// SystemView::host against what the host's loader itself prints.
#include "venvfix/elf/system_view.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "elf/elf_test_support.hpp"
#include "elf/loader_help.hpp"
#include "support/threads_refused.hpp"

namespace venvfix::elf {
namespace {

// `ld.so --help` of glibc 2.36 (Debian 12), in the parts that matter, as printed on a CPU
// without x86-64-v4.
constexpr std::string_view k_help =
    R"(Usage: /lib64/ld-linux-x86-64.so.2 [OPTION]... EXECUTABLE-FILE [ARGS-FOR-PROGRAM...]

Shared library search path:
  (libraries located via /etc/ld.so.cache)
  /lib/x86_64-linux-gnu (system search path)
  /usr/lib/x86_64-linux-gnu (system search path)
  /lib (system search path)
  /usr/lib (system search path)

Subdirectories of glibc-hwcaps directories, in priority order:
  x86-64-v4
  x86-64-v3 (supported, searched)
  x86-64-v2 (supported, searched)

Legacy HWCAP subdirectories under library search path directories:
  x86_64 (AT_PLATFORM; supported, searched)
  tls (supported, searched)
  avx512_1
  x86_64 (supported, searched)
)";

TEST(ElfSystemView, ParsesTheLoadersHelp) {
  detail::LoaderHelp help = detail::parse_loader_help(k_help);
  EXPECT_EQ(help.system_dirs,
            (std::vector<std::string>{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib",
                                      "/usr/lib"}));
  EXPECT_EQ(help.glibc_hwcaps, (std::vector<std::string>{"x86-64-v3", "x86-64-v2"}));
  EXPECT_EQ(help.legacy_platform, "x86_64");
  EXPECT_TRUE(help.legacy_tls);
  EXPECT_EQ(help.legacy_hwcaps, (std::vector<std::string>{"x86_64"}));
  // The order glibc 2.36 prints with LD_DEBUG=libs on such a machine.
  EXPECT_EQ(detail::legacy_subdirs(help),
            (std::vector<std::string>{"tls/x86_64/x86_64", "tls/x86_64", "tls/x86_64", "tls",
                                      "x86_64/x86_64", "x86_64", "x86_64"}));
}

// The same loader on an Intel CPU with AVX-512: glibc names the platform "haswell" (not the
// kernel's AT_PLATFORM "x86_64") and searches two hwcap names, printed from the highest bit
// down. The expected order is what that loader printed with LD_DEBUG=libs.
constexpr std::string_view k_help_avx512 =
    R"(Legacy HWCAP subdirectories under library search path directories:
  haswell (AT_PLATFORM; supported, searched)
  tls (supported, searched)
  avx512_1 (supported, searched)
  x86_64 (supported, searched)
)";

TEST(ElfSystemView, LegacySubdirectoriesKeepTheOrderTheLoaderPrints) {
  detail::LoaderHelp help = detail::parse_loader_help(k_help_avx512);
  EXPECT_EQ(help.legacy_platform, "haswell");
  EXPECT_EQ(help.legacy_hwcaps, (std::vector<std::string>{"avx512_1", "x86_64"}));
  EXPECT_EQ(detail::legacy_subdirs(help),
            (std::vector<std::string>{
                "tls/haswell/avx512_1/x86_64", "tls/haswell/avx512_1", "tls/haswell/x86_64",
                "tls/haswell", "tls/avx512_1/x86_64", "tls/avx512_1", "tls/x86_64", "tls",
                "haswell/avx512_1/x86_64", "haswell/avx512_1", "haswell/x86_64", "haswell",
                "avx512_1/x86_64", "avx512_1", "x86_64"}));
}

TEST(ElfSystemView, SplitsLdLibraryPathLikeTheLoader) {
  EXPECT_TRUE(split_ld_library_path("").empty());
  EXPECT_EQ(split_ld_library_path("/a:/b;/c"), (std::vector<fs::path>{"/a", "/b", "/c"}));
  EXPECT_EQ(split_ld_library_path("/a::/b:"), (std::vector<fs::path>{"/a", "", "/b", ""}));
}

// The subdirectories, $LIB and default directories of the host view are exactly those the
// host's loader tries: compare with its LD_DEBUG=libs trace of an LD_LIBRARY_PATH search.
TEST(ElfSystemView, HostViewMatchesTheLoadersOwnSearch) {
  auto view = SystemView::host(UseLdLibraryPath::no);
  ASSERT_TRUE(view) << view.error().message;
  ASSERT_FALSE(view->default_dirs.empty());
  for (const fs::path& dir : view->default_dirs) EXPECT_TRUE(dir.is_absolute()) << dir;
  EXPECT_FALSE(view->platform.empty());
  EXPECT_FALSE(view->lib.empty());
  ASSERT_TRUE(view->cache) << "this host has an /etc/ld.so.cache";

  // libm needs libc.so.6, which the loader then searches for in LD_LIBRARY_PATH first.
  auto libm = view->cache->find("libm.so.6", ElfClass::elf64, k_machine_x86_64);
  ASSERT_TRUE(libm);
  // $PLATFORM and $LIB as the loader itself expands them (the kernel's AT_PLATFORM is not
  // always glibc's: "haswell" on some Intel CPUs).
  auto trace = testing::run_command(
      "env -i LD_DEBUG=libs 'LD_LIBRARY_PATH=/venvfix-nonexistent/$PLATFORM/$LIB' " +
      view->interpreter.string() + " --list " + testing::quote(*libm));
  const std::string marker = "search path=";
  auto at = trace.output.find(marker);
  ASSERT_NE(at, std::string::npos) << trace.output;
  auto end = trace.output.find_first_of("\t\n", at);
  const std::string printed = trace.output.substr(at + marker.size(), end - at - marker.size());
  std::vector<std::string> expected;
  const std::string base = "/venvfix-nonexistent/" + view->platform + "/" + view->lib;
  const std::string base_slash = base + "/";
  for (const std::string& sub : view->hwcap_subdirs) expected.push_back(base_slash + sub);
  expected.push_back(base);
  EXPECT_EQ(printed, join(expected, ":")) << trace.output;
}

// The loader is asked where it searches even at a process limit (a container's pids.max): a
// refused start is tried again, here until another thread raises the limit after 300 ms; refused
// for good, the reason is given (and the view warns, assuming the defaults).
TEST(ElfSystemView, TheLoaderIsAskedAgainWhileAProcessLimitRefusesIt) {
  const std::filesystem::path interpreter = SystemView::isolated().interpreter;
  std::promise<const venvfix::testing::PidsGroup*> made;
  std::thread raiser([group = made.get_future()]() mutable {
    const venvfix::testing::PidsGroup* limited = group.get();
    if (limited == nullptr) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_TRUE(limited->set_max(2));
  });
  venvfix::testing::ThreadsRefused refused;
  const std::string why = refused.start();
  made.set_value(why.empty() ? &refused.group() : nullptr);
  if (!why.empty()) {
    raiser.join();
    GTEST_SKIP() << why;
  }
  std::string not_started;
  const std::optional<std::string> later = detail::run_loader_help(interpreter, &not_started);
  raiser.join();
  ASSERT_TRUE(later) << not_started;
  EXPECT_FALSE(detail::parse_loader_help(*later).system_dirs.empty()) << *later;

  ASSERT_TRUE(refused.group().set_max(1));
  EXPECT_FALSE(detail::run_loader_help(interpreter, &not_started));
  EXPECT_EQ(not_started, "posix_spawn: Resource temporarily unavailable");
}

}  // namespace
}  // namespace venvfix::elf
