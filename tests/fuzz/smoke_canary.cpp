// The smoke driver's own check (tests/fuzz/smoke_main.cpp): a target whose invariant fails on
// any input holding the byte 0xff, which the seed lacks and a mutation soon makes. Its test
// passes only when the driver stops with the failure and leaves that input behind.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  VENVFIX_FUZZ_CHECK(size == 0 || std::memchr(data, 0xff, size) == nullptr);
  return 0;
}
