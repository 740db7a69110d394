#include "wheel/member_stream.hpp"

#include <libdeflate.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>

#include "venvfix/base/strings.hpp"

namespace venvfix::wheel::detail {

namespace {

// Hashed and written in pieces that stay in the core's cache between the three passes.
constexpr std::size_t k_piece = 256u << 10;

Status pwrite_all(int fd, std::span<const std::byte> data, std::uint64_t offset,
                  const std::string& what) {
  while (!data.empty()) {
    ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ExitCode::error, "{}: {}", what, errno_message(errno));
    }
    data = data.subspan(static_cast<std::size_t>(n));
    offset += static_cast<std::uint64_t>(n);
  }
  return ok();
}

}  // namespace

Status MemberSink::consume(std::span<const std::byte> data) {
  while (!data.empty()) {
    std::span<const std::byte> piece = data.first(std::min(data.size(), k_piece));
    m_hasher.update(piece);
    m_crc = libdeflate_crc32(m_crc, piece.data(), piece.size());
    if (m_fd >= 0) VENVFIX_TRY(pwrite_all(m_fd, piece, m_written, m_what));
    m_written += piece.size();
    data = data.subspan(piece.size());
  }
  return ok();
}

Result<std::vector<StreamedMember>> stream_members(ZipReader& zip, const WheelContents& contents,
                                                   const std::string& display,
                                                   const TargetFor& target) {
  std::unordered_map<std::string_view, std::size_t> index;
  index.reserve(contents.members.size());
  for (std::size_t i = 0; i < contents.members.size(); ++i) index[contents.members[i].name] = i;
  std::vector<StreamedMember> out(contents.members.size());
  std::vector<bool> seen(contents.members.size(), false);
  std::size_t seen_count = 0;
  Sha256 hasher;
  for (;;) {
    VENVFIX_TRY_ASSIGN(std::optional<ZipEntry> entry, zip.next());
    if (!entry) break;
    if (entry->type == EntryType::directory || entry->name.ends_with('/')) continue;
    auto it = index.find(entry->name);
    if (it == index.end() || seen[it->second]) {
      return make_error(ExitCode::usage,
                        "{}: member {} was not there when the wheel was checked (the file "
                        "changed); the wheel is refused",
                        display, printable_excerpt(entry->name, 200));
    }
    const std::size_t i = it->second;
    seen[i] = true;
    ++seen_count;
    const WheelMember& member = contents.members[i];
    VENVFIX_TRY_ASSIGN(int fd, target(i));
    std::string what = fmt::format("{}: member {}", display, member.name);
    VENVFIX_TRY_ASSIGN(
        std::uint64_t got,
        zip.read_data(member.name, member.size, [&](std::span<const std::byte> block) -> Status {
          hasher.update(block);
          if (fd >= 0) return write_all(fd, block, what);
          return ok();
        }));
    out[i].sha256 = hasher.finish();
    if (got != member.size) {
      return make_error(ExitCode::usage,
                        "{}: member {} holds {} bytes but its header and RECORD say {}; the "
                        "wheel is refused",
                        display, member.name, got, member.size);
    }
    if (member.sha256 && *member.sha256 != out[i].sha256) {
      return make_error(ExitCode::usage,
                        "{}: member {} does not match its sha256 in RECORD; the wheel is refused",
                        display, member.name);
    }
  }
  if (seen_count != contents.members.size()) {
    return make_error(ExitCode::usage,
                      "{}: the archive holds fewer members than when it was checked; the wheel "
                      "is refused",
                      display);
  }
  return out;
}

}  // namespace venvfix::wheel::detail
