// ELF reading with libelf (elfutils). See elf_file.hpp for the contract.
//
// libelf checks the ELF header, the program header table and every raw chunk against the
// image size (elf_getdata_rawchunk returns null for a range outside the file); what it does
// not know (virtual addresses, string indexes, DT_NULL termination) is checked here.
#include "venvfix/elf/elf_file.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <variant>

#include "venvfix/base/byte_reader.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::elf {

namespace {

constexpr std::array<unsigned char, 4> k_magic = {0x7f, 'E', 'L', 'F'};

void init_libelf() {
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });
}

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};
using ElfHandle = std::unique_ptr<Elf, ElfCloser>;

std::string libelf_message() {
  const char* message = elf_errmsg(-1);
  return message != nullptr ? message : "unknown libelf error";
}

Error corrupt(std::string_view name, std::string_view what) {
  return make_error(ExitCode::error, "{}: corrupt ELF file: {}", name, what);
}

// The NUL-terminated string at the start of a chunk, or nullopt when it runs past the chunk.
std::optional<std::string_view> string_in(const char* data, std::size_t size) {
  if (data == nullptr || size == 0) return std::nullopt;
  const void* nul = std::memchr(data, '\0', size);
  if (nul == nullptr) return std::nullopt;
  return std::string_view(data, static_cast<std::size_t>(static_cast<const char*>(nul) - data));
}

// Reads strings of the dynamic string table on demand, in small windows: the table of a large
// library (libLLVM, libtorch_cuda) holds megabytes of symbol names, of which the reader needs
// a few dozen bytes. libelf bounds every window by the file size.
class StringReader {
 public:
  StringReader(Elf* e, std::uint64_t offset, std::uint64_t size)
      : m_elf(e), m_offset(offset), m_size(size) {}

  enum class Failure { outside_table, outside_file, unterminated };

  // The string at `index`, or why there is none.
  std::variant<std::string, Failure> at(std::uint64_t index) const {
    if (index >= m_size) return Failure::outside_table;
    std::string text;
    std::uint64_t position = index;
    std::uint64_t window = 256;
    while (position < m_size) {
      const std::uint64_t length = std::min(window, m_size - position);
      // libelf takes a signed offset: one the file's fields add up past INT64_MAX is outside.
      const std::optional<std::uint64_t> at_file = checked_add(m_offset, position);
      if (!at_file || *at_file > static_cast<std::uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Failure::outside_file;
      }
      Elf_Data* data =
          elf_getdata_rawchunk(m_elf, static_cast<int64_t>(*at_file), length, ELF_T_BYTE);
      if (data == nullptr || data->d_buf == nullptr) return Failure::outside_file;
      const auto* bytes = static_cast<const char*>(data->d_buf);
      if (auto found = string_in(bytes, data->d_size)) {
        text.append(*found);
        return text;
      }
      text.append(bytes, data->d_size);
      position += length;
      window = std::min<std::uint64_t>(window * 4, 1u << 20);
    }
    return Failure::unterminated;
  }

 private:
  Elf* m_elf;
  std::uint64_t m_offset;
  std::uint64_t m_size;
};

std::vector<std::string> split_path_list(std::string_view text) {
  std::vector<std::string> parts;
  if (text.empty()) return parts;
  for (std::string_view part : split(text, ':')) parts.emplace_back(part);
  return parts;
}

struct DynamicValues {
  std::vector<std::uint64_t> needed;
  std::optional<std::uint64_t> soname, rpath, runpath, strtab, strsz;
  std::uint64_t flags_1 = 0;
};

// Maps a virtual address range to a file range through the PT_LOAD segments, as the loader
// sees the file once mapped. Returns the file offset and how many bytes of the segment's file
// image follow it.
std::optional<std::pair<std::uint64_t, std::uint64_t>> vaddr_to_offset(
    const std::vector<GElf_Phdr>& loads, std::uint64_t vaddr) {
  for (const GElf_Phdr& ph : loads) {
    if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
      const std::uint64_t delta = vaddr - ph.p_vaddr;  // < p_filesz: no underflow
      const std::optional<std::uint64_t> offset = checked_add(ph.p_offset, delta);
      if (!offset) return std::nullopt;
      return std::make_pair(*offset, ph.p_filesz - delta);
    }
  }
  return std::nullopt;
}

ElfKind kind_of(GElf_Half type) {
  switch (type) {
    case ET_DYN:
      return ElfKind::shared;
    case ET_EXEC:
      return ElfKind::executable;
    case ET_REL:
      return ElfKind::relocatable;
    default:
      return ElfKind::other;
  }
}

// e_ident and the ELF header: class, encoding, ABI, machine, file type.
Status read_identity(Elf* e, std::string_view name, ElfInfo& info) {
  if (elf_kind(e) != ELF_K_ELF) return corrupt(name, "unsupported ELF class or layout");
  std::size_t ident_size = 0;
  const char* ident = elf_getident(e, &ident_size);
  if (ident == nullptr || ident_size < EI_NIDENT) return corrupt(name, "truncated ELF header");
  switch (static_cast<unsigned char>(ident[EI_CLASS])) {
    case ELFCLASS32:
      info.elf_class = ElfClass::elf32;
      break;
    case ELFCLASS64:
      info.elf_class = ElfClass::elf64;
      break;
    default:
      return corrupt(name, "invalid ELF class");
  }
  info.data_encoding = static_cast<std::uint8_t>(ident[EI_DATA]);
  if (info.data_encoding != ELFDATA2LSB && info.data_encoding != ELFDATA2MSB) {
    return corrupt(name, "invalid data encoding");
  }
  info.os_abi = static_cast<std::uint8_t>(ident[EI_OSABI]);
  info.abi_version = static_cast<std::uint8_t>(ident[EI_ABIVERSION]);
  GElf_Ehdr ehdr;
  if (gelf_getehdr(e, &ehdr) == nullptr) {
    return corrupt(name, fmt::format("cannot read the ELF header ({})", libelf_message()));
  }
  info.machine = ehdr.e_machine;
  info.kind = kind_of(ehdr.e_type);
  return ok();
}

struct ProgramHeaders {
  std::vector<GElf_Phdr> loads;
  std::optional<GElf_Phdr> dynamic;
  std::optional<GElf_Phdr> interp;
};

Result<ProgramHeaders> read_program_headers(Elf* e, std::string_view name) {
  std::size_t phnum = 0;
  if (elf_getphdrnum(e, &phnum) != 0) {
    return corrupt(name, fmt::format("bad program header count ({})", libelf_message()));
  }
  ProgramHeaders headers;
  for (std::size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(e, static_cast<int>(i), &ph) == nullptr) {
      return corrupt(
          name, fmt::format("program header {} is outside the file ({})", i, libelf_message()));
    }
    if (ph.p_type == PT_LOAD) headers.loads.push_back(ph);
    if (ph.p_type == PT_DYNAMIC && !headers.dynamic) headers.dynamic = ph;
    if (ph.p_type == PT_INTERP && !headers.interp) headers.interp = ph;
  }
  return headers;
}

Result<std::string> read_interpreter(Elf* e, std::string_view name, const GElf_Phdr& interp) {
  Elf_Data* data =
      elf_getdata_rawchunk(e, static_cast<int64_t>(interp.p_offset), interp.p_filesz, ELF_T_BYTE);
  if (data == nullptr || data->d_buf == nullptr) {
    return corrupt(name, "PT_INTERP lies outside the file");
  }
  auto text = string_in(static_cast<const char*>(data->d_buf), data->d_size);
  if (!text) return corrupt(name, "PT_INTERP is not NUL-terminated");
  return std::string(*text);
}

// Records one dynamic entry; the last of repeated tags wins, as in ld.so's elf_get_dynamic_info.
void record_dynamic(const GElf_Dyn& dyn, DynamicValues& values) {
  switch (dyn.d_tag) {
    case DT_NEEDED:
      values.needed.push_back(dyn.d_un.d_val);
      break;
    case DT_SONAME:
      values.soname = dyn.d_un.d_val;
      break;
    case DT_RPATH:
      values.rpath = dyn.d_un.d_val;
      break;
    case DT_RUNPATH:
      values.runpath = dyn.d_un.d_val;
      break;
    case DT_STRTAB:
      values.strtab = dyn.d_un.d_ptr;
      break;
    case DT_STRSZ:
      values.strsz = dyn.d_un.d_val;
      break;
    case DT_FLAGS_1:
      values.flags_1 = dyn.d_un.d_val;
      break;
    default:
      break;
  }
}

Result<DynamicValues> read_dynamic(Elf* e, std::string_view name, const GElf_Phdr& dynamic) {
  const std::size_t dyn_size = gelf_fsize(e, ELF_T_DYN, 1, EV_CURRENT);
  if (dyn_size == 0) return corrupt(name, "unsupported dynamic entry size");
  Elf_Data* dyn_data =
      elf_getdata_rawchunk(e, static_cast<int64_t>(dynamic.p_offset), dynamic.p_filesz, ELF_T_DYN);
  if (dyn_data == nullptr) {
    return corrupt(name, fmt::format("the dynamic section (offset {}, {} bytes) lies outside the "
                                     "file",
                                     dynamic.p_offset, dynamic.p_filesz));
  }
  DynamicValues values;
  const std::size_t count = dyn_data->d_size / dyn_size;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Dyn dyn;
    if (gelf_getdyn(dyn_data, static_cast<int>(i), &dyn) == nullptr) {
      return corrupt(name, fmt::format("cannot read dynamic entry {}", i));
    }
    if (dyn.d_tag == DT_NULL) return values;
    record_dynamic(dyn, values);
  }
  return corrupt(name, "the dynamic section has no DT_NULL terminator");
}

// The dynamic string table as a bounded reader, with errors that name the tag and index.
class DynamicStrings {
 public:
  DynamicStrings(Elf* e, std::string_view name, std::uint64_t offset, std::uint64_t size)
      : m_reader(e, offset, size), m_name(name), m_offset(offset), m_size(size) {}

  Result<std::string> at(std::uint64_t index, std::string_view tag) const {
    auto text = m_reader.at(index);
    if (auto* value = std::get_if<std::string>(&text)) return std::move(*value);
    switch (std::get<StringReader::Failure>(text)) {
      case StringReader::Failure::outside_table:
        return corrupt(m_name, fmt::format("{} string index {} is outside the string table ({} "
                                           "bytes)",
                                           tag, index, m_size));
      case StringReader::Failure::outside_file:
        return corrupt(m_name, fmt::format("the dynamic string table (offset {}, {} bytes) lies "
                                           "outside the file",
                                           m_offset, m_size));
      case StringReader::Failure::unterminated:
        break;
    }
    return corrupt(m_name, fmt::format("{} string at index {} is not NUL-terminated", tag, index));
  }

 private:
  StringReader m_reader;
  std::string_view m_name;
  std::uint64_t m_offset;
  std::uint64_t m_size;
};

// DT_NEEDED, DT_SONAME, DT_RPATH and DT_RUNPATH as strings.
Status read_dynamic_strings(Elf* e, std::string_view name, const ProgramHeaders& headers,
                            const DynamicValues& values, ElfInfo& info) {
  const bool needs_strings =
      !values.needed.empty() || values.soname || values.rpath || values.runpath;
  if (!needs_strings) return ok();
  if (!values.strtab) return corrupt(name, "dynamic strings are used but DT_STRTAB is missing");
  auto range = vaddr_to_offset(headers.loads, *values.strtab);
  if (!range) {
    return corrupt(
        name, fmt::format("DT_STRTAB address {:#x} is not in any loaded segment", *values.strtab));
  }
  std::uint64_t table_size = range->second;
  if (values.strsz) table_size = std::min(table_size, *values.strsz);
  const DynamicStrings strings(e, name, range->first, table_size);
  for (std::uint64_t index : values.needed) {
    VENVFIX_TRY_ASSIGN(std::string needed, strings.at(index, "DT_NEEDED"));
    info.needed.push_back(std::move(needed));
  }
  if (values.soname) {
    VENVFIX_TRY_ASSIGN(info.soname, strings.at(*values.soname, "DT_SONAME"));
  }
  if (values.rpath) {
    VENVFIX_TRY_ASSIGN(std::string text, strings.at(*values.rpath, "DT_RPATH"));
    info.has_rpath = true;
    info.rpath = split_path_list(text);
  }
  if (values.runpath) {
    VENVFIX_TRY_ASSIGN(std::string text, strings.at(*values.runpath, "DT_RUNPATH"));
    info.has_runpath = true;
    info.runpath = split_path_list(text);
  }
  return ok();
}

Result<ElfInfo> parse_handle(Elf* e, std::string_view name) {
  ElfInfo info;
  VENVFIX_TRY(read_identity(e, name, info));
  VENVFIX_TRY_ASSIGN(ProgramHeaders headers, read_program_headers(e, name));
  if (headers.interp) {
    VENVFIX_TRY_ASSIGN(info.interpreter, read_interpreter(e, name, *headers.interp));
  }
  if (!headers.dynamic) return info;
  info.has_dynamic = true;
  VENVFIX_TRY_ASSIGN(DynamicValues values, read_dynamic(e, name, *headers.dynamic));
  info.nodeflib = (values.flags_1 & DF_1_NODEFLIB) != 0;
  if (info.kind == ElfKind::shared && (values.flags_1 & DF_1_PIE) != 0) {
    info.kind = ElfKind::executable;
  }
  VENVFIX_TRY(read_dynamic_strings(e, name, headers, values, info));
  return info;
}

}  // namespace

const std::vector<std::string>& ElfInfo::effective_rpath() const {
  static const std::vector<std::string> k_none;
  return has_runpath ? k_none : rpath;
}

bool has_elf_magic(const fs::path& path) {
  auto fd = open_file(path, O_RDONLY);
  if (!fd) return false;
  std::array<unsigned char, 4> head{};
  ssize_t got = ::pread(fd->get(), head.data(), head.size(), 0);
  return got == static_cast<ssize_t>(head.size()) && head == k_magic;
}

Result<std::optional<ElfInfo>> read_elf(const fs::path& path) {
  init_libelf();
  const std::string name = path.string();
  VENVFIX_TRY_ASSIGN(Fd fd, open_file(path, O_RDONLY));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return make_error(ExitCode::error, "{}: {}", name, errno_message(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return make_error(ExitCode::error, "{}: not a regular file", name);
  }
  std::array<unsigned char, 4> head{};
  ssize_t got = ::pread(fd.get(), head.data(), head.size(), 0);
  if (got < 0) return make_error(ExitCode::error, "{}: {}", name, errno_message(errno));
  if (got != static_cast<ssize_t>(head.size()) || head != k_magic) {
    return std::optional<ElfInfo>{};
  }
  ElfHandle handle(elf_begin(fd.get(), ELF_C_READ, nullptr));
  if (!handle) {
    return corrupt(name, fmt::format("libelf cannot open it ({})", libelf_message()));
  }
  VENVFIX_TRY_ASSIGN(ElfInfo info, parse_handle(handle.get(), name));
  return std::optional<ElfInfo>(std::move(info));
}

Result<ElfInfo> parse_elf(std::span<const std::byte> image, std::string_view name) {
  init_libelf();
  if (image.size() < k_magic.size() ||
      std::memcmp(image.data(), k_magic.data(), k_magic.size()) != 0) {
    return make_error(ExitCode::error, "{}: not an ELF file (no ELF magic)", name);
  }
  // elf_memory wants a writable buffer (it may convert in place); hand it a private copy.
  std::vector<char> copy(image.size());
  std::memcpy(copy.data(), image.data(), image.size());
  ElfHandle handle(elf_memory(copy.data(), copy.size()));
  if (!handle) {
    return corrupt(name, fmt::format("libelf cannot open it ({})", libelf_message()));
  }
  return parse_handle(handle.get(), name);
}

std::string_view elf_class_name(ElfClass elf_class) {
  return elf_class == ElfClass::elf32 ? "ELFCLASS32" : "ELFCLASS64";
}

std::string machine_name(std::uint16_t machine) {
  switch (machine) {
    case EM_386:
      return "i386";
    case EM_X86_64:
      return "x86-64";
    case EM_AARCH64:
      return "aarch64";
    case EM_ARM:
      return "arm";
    case EM_PPC64:
      return "ppc64";
    case EM_S390:
      return "s390";
    case EM_RISCV:
      return "riscv";
    default:
      return fmt::format("machine {}", machine);
  }
}

}  // namespace venvfix::elf
