// libFuzzer target: the ELF reader and the ld.so.cache parser over arbitrary bytes. Neither may
// crash, hang or read out of bounds; errors are fine.
#include <cstddef>
#include <cstdint>
#include <span>

#include "venvfix/elf/elf_file.hpp"
#include "venvfix/elf/ld_cache.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto info = venvfix::elf::parse_elf(bytes, "fuzz-input");
  (void)info;
  auto cache = venvfix::elf::LdCache::parse(bytes, "fuzz-input");
  if (cache) {
    for (const auto& entry : cache->entries()) {
      (void)cache->find(entry.soname, venvfix::elf::ElfClass::elf64,
                        venvfix::elf::k_machine_x86_64);
    }
  }
  return 0;
}
