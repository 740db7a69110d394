// Reading the dynamic-linking facts of one ELF file: class, machine, type, DT_SONAME,
// DT_NEEDED, DT_RPATH, DT_RUNPATH, PT_INTERP and DF_1_NODEFLIB.
//
// The reader takes the dynamic loader's view: it finds the dynamic section through the program
// headers (PT_DYNAMIC) and the string table through DT_STRTAB mapped by the PT_LOAD segments,
// as ld.so does, so stripped section headers change nothing. Only the ELF header, the program
// headers, the dynamic section and the strings it names are touched (the file is mapped, not
// read whole). Every offset, size and string index is checked against the file: hostile input
// gives an Error, never a crash or an out-of-bounds read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"

namespace venvfix::elf {

namespace fs = std::filesystem;

enum class ElfClass { elf32, elf64 };
enum class ElfKind { shared, executable, relocatable, other };

// e_machine values venvfix names in messages (the full list is in <elf.h>).
inline constexpr std::uint16_t k_machine_386 = 3;
inline constexpr std::uint16_t k_machine_x86_64 = 62;
inline constexpr std::uint16_t k_machine_aarch64 = 183;
inline constexpr std::uint16_t k_machine_ppc64 = 21;
inline constexpr std::uint16_t k_machine_s390 = 22;
inline constexpr std::uint16_t k_machine_riscv = 243;
inline constexpr std::uint8_t k_data_lsb = 1;  // ELFDATA2LSB
inline constexpr std::uint8_t k_data_msb = 2;  // ELFDATA2MSB

struct ElfInfo {
  ElfClass elf_class = ElfClass::elf64;
  std::uint16_t machine = 0;
  std::uint8_t data_encoding = 0;  // EI_DATA: k_data_lsb or k_data_msb
  std::uint8_t os_abi = 0;         // EI_OSABI
  std::uint8_t abi_version = 0;    // EI_ABIVERSION
  ElfKind kind = ElfKind::other;
  std::string soname;               // DT_SONAME; empty when absent (the last one wins, as in ld.so)
  std::vector<std::string> needed;  // DT_NEEDED, in dynamic-section order
  // DT_RPATH / DT_RUNPATH split on ':'. Empty elements are kept (ld.so reads them as the
  // current directory); an absent tag or an empty string gives an empty vector. Both are kept
  // as written even when both tags exist: ld.so then ignores DT_RPATH (see has_runpath).
  std::vector<std::string> rpath;
  std::vector<std::string> runpath;
  bool has_rpath = false;    // DT_RPATH present (even if empty)
  bool has_runpath = false;  // DT_RUNPATH present (even if empty): disables every RPATH rule
  std::string interpreter;   // PT_INTERP, empty when absent
  bool nodeflib = false;     // DF_1_NODEFLIB in DT_FLAGS_1
  bool has_dynamic = false;  // a PT_DYNAMIC segment exists

  // DT_RPATH as ld.so uses it: empty when the object also has DT_RUNPATH.
  const std::vector<std::string>& effective_rpath() const;
};

// True when the file starts with "\x7fELF". Reads 4 bytes; false for anything unreadable.
bool has_elf_magic(const fs::path& path);

// Reads `path`. nullopt: not an ELF file (no magic; a file shorter than 4 bytes; a directory
// or other non-regular file is an Error, since it cannot be an ELF object). Error: an ELF file
// that is truncated, corrupt or of an unsupported layout; the message names the file and the
// defect. Missing or unreadable files are Errors naming the path and errno's reason.
Result<std::optional<ElfInfo>> read_elf(const fs::path& path);

// Parses an ELF image held in memory; `name` names it in messages. A buffer without the ELF
// magic is an Error here (unlike read_elf, which reports it as nullopt).
Result<ElfInfo> parse_elf(std::span<const std::byte> image, std::string_view name);

// "ELFCLASS64", "x86-64", … for messages.
std::string_view elf_class_name(ElfClass elf_class);
std::string machine_name(std::uint16_t machine);

}  // namespace venvfix::elf
