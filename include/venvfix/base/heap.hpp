// Huge pages for the heap of a command that builds tens of MiB of tables and exits: the warm
// analysis of a torch-sized venv touches about 22 MiB of fresh heap, and each first touch of a
// 4 KiB page is a page fault. On a VM those are dear (about 6 µs each on the benchmark host:
// 5,600 faults, a sixth of a warm doctor's CPU); transparent huge pages map 2 MiB per fault.
//
// glibc does this itself with GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which is read only when a
// process starts; reserve_huge_page_heap() gets the same effect from inside: it makes the main
// arena grow in one large step, serves allocations up to k_heap_mmap_threshold (and those of
// worker threads) from it rather than from separate mappings, and asks the kernel (madvise
// MADV_HUGEPAGE) for huge pages there.
// Only for commands whose memory is small and short-lived (the analysis): memory freed into the
// heap stays resident until the process ends.
#pragma once

#include <cstddef>

namespace venvfix {

inline constexpr std::size_t k_heap_reserve = std::size_t{64} << 20;
inline constexpr std::size_t k_heap_mmap_threshold = std::size_t{32} << 20;

// Whether the kernel gives huge pages to a region that asks for them: its mode
// (/sys/kernel/mm/transparent_hugepage/enabled) is "always" or "madvise".
bool transparent_huge_pages_available();

// Returns the bytes of heap now advised for huge pages: 0 where transparent huge pages are off
// ("never"), the allocator is not glibc's main arena (sanitizers), or the heap could not grow;
// then nothing has changed but the allocator's thresholds.
std::size_t reserve_huge_page_heap(std::size_t reserve = k_heap_reserve);

}  // namespace venvfix
