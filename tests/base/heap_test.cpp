// reserve_huge_page_heap in a program built here from its source without sanitizers (the test
// binary's allocator is ASan's under CI, which has no brk heap to advise): fresh heap, touched
// by the main thread and by a worker, costs a fraction of the page faults it costs without.
#include "venvfix/base/heap.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "support/paths.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix {
namespace {

// Allocates and touches 32 blocks of 1 MiB, half on a second thread, after calling
// reserve_huge_page_heap() when given an argument; prints "<advised bytes> <minor faults>".
constexpr const char* k_probe = R"(
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "venvfix/base/heap.hpp"

static long touch_blocks(int count) {
  long sum = 0;
  for (int i = 0; i < count; ++i) {
    char* block = static_cast<char*>(std::malloc(1 << 20));
    std::memset(block, i + 1, 1 << 20);
    sum += block[i * 4096];
  }
  return sum;
}

int main(int argc, char**) {
  std::size_t advised = argc > 1 ? venvfix::reserve_huge_page_heap() : 0;
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  long sum = 0;
  std::thread worker([&sum] { sum += touch_blocks(16); });
  worker.join();
  sum += touch_blocks(16);
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  std::printf("%zu %ld %ld\n", advised, after.ru_minflt - before.ru_minflt, sum);
}
)";

struct ProbeRun {
  std::size_t advised = 0;
  long faults = 0;
};

TEST(Heap, FreshHeapIsFaultedInHugePagesOnTheMainThreadAndAWorker) {
  if (!transparent_huge_pages_available()) {
    GTEST_SKIP() << "transparent huge pages are off on this machine "
                    "(/sys/kernel/mm/transparent_hugepage/enabled says never)";
  }
  auto dir = TempDir::create("venvfix-heap-test-");
  ASSERT_TRUE(dir);
  const fs::path source = dir->path() / "probe.cpp";
  const fs::path program = dir->path() / "probe";
  ASSERT_TRUE(write_file_atomic(source, k_probe));
  const fs::path root = testing::source_dir();
  auto built = testing::run_command(
      {"c++", "-std=c++20", "-O1", "-pthread", "-I", (root / "include").string(),
       (root / "src/base/heap.cpp").string(), source.string(), "-o", program.string()});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  auto run = [&](bool reserve) {
    std::vector<std::string> argv = {program.string()};
    if (reserve) argv.emplace_back("reserve");
    auto ran = testing::run_command(argv);
    EXPECT_EQ(ran.exit_code, 0) << ran.err;
    ProbeRun result;
    std::istringstream(ran.out) >> result.advised >> result.faults;
    return result;
  };
  ProbeRun plain = run(false);
  ProbeRun reserved = run(true);
  // 32 MiB in 4 KiB pages is 8,192 faults; in 2 MiB pages a few dozen (plus the allocator's).
  EXPECT_GT(plain.faults, 8000) << "the probe no longer touches its blocks";
  EXPECT_GE(reserved.advised, k_heap_mmap_threshold);
  EXPECT_LT(reserved.faults, plain.faults / 8)
      << reserved.faults << " faults with the heap reserved, " << plain.faults << " without";
}

}  // namespace
}  // namespace venvfix
