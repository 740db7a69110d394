#include "venvfix/base/heap.hpp"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

namespace venvfix {

namespace {

constexpr std::uintptr_t k_huge_page = std::uintptr_t{2} << 20;

std::uintptr_t program_break() {
  return reinterpret_cast<std::uintptr_t>(::sbrk(0));
}

// MADV_HUGEPAGE over the whole huge pages of the heap grown from `before` to `after`; the bytes
// advised, 0 when none (not glibc's brk heap: a sanitizer's allocator, say).
std::size_t advise_huge_pages(std::uintptr_t before, std::uintptr_t after) {
  if (after <= before) return 0;
  const std::uintptr_t start = (before + k_huge_page - 1) & ~(k_huge_page - 1);
  const std::uintptr_t end = after & ~(k_huge_page - 1);
  if (end <= start) return 0;
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the heap's own addresses
  if (::madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE) != 0) return 0;
  return end - start;
}

}  // namespace

// An ifstream, not base/fs.hpp's read_file: this file builds on its own, so that its test can
// compile it without sanitizers (tests/base/heap_test.cpp).
bool transparent_huge_pages_available() {
  std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(file, modes);
  return modes.find("[always]") != std::string::npos ||
         modes.find("[madvise]") != std::string::npos;
}

std::size_t reserve_huge_page_heap(std::size_t reserve) {
  if (!transparent_huge_pages_available()) return 0;
  // Every later growth of the heap asks for `reserve` more, and blocks up to the threshold
  // come from the heap (each a fresh mapping otherwise, faulted in 4 KiB at a time).
  (void)::mallopt(M_MMAP_THRESHOLD, static_cast<int>(k_heap_mmap_threshold));
  (void)::mallopt(M_TOP_PAD, static_cast<int>(reserve));
  // Worker threads allocate from it too, not from arenas of their own (each a mapping that
  // would fault 4 KiB at a time); the analysis's workers allocate little.
  (void)::mallopt(M_ARENA_MAX, 1);
  // Make the heap grow now, while we know where: the top chunk left over from start-up is
  // smaller than a few such blocks.
  const std::uintptr_t before = program_break();
  constexpr std::size_t k_block = std::size_t{64} << 10;
  std::array<void*, 8> blocks{};
  for (void*& block : blocks) {
    if (program_break() != before) break;
    block = std::malloc(k_block);  // NOLINT(cppcoreguidelines-no-malloc): the heap itself
  }
  const std::uintptr_t after = program_break();
  const std::size_t advised = advise_huge_pages(before, after);
  // Only now: freeing the blocks may trim the heap's end below `after`, and an madvise over a
  // range no longer mapped fails with ENOMEM (it did, one start in forty).
  for (void* block : blocks) std::free(block);  // NOLINT(cppcoreguidelines-no-malloc)
  return advised;
}

}  // namespace venvfix
