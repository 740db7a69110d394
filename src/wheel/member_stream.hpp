// Phase two: inflating every member once, hashing it and (optionally) writing it, checked
// against what phase one read from the central directory and RECORD.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/wheel/wheel.hpp"
#include "wheel/zip_reader.hpp"

namespace venvfix::wheel::detail {

// What was read of one member: its bytes' digest (always computed).
struct StreamedMember {
  Sha256Digest sha256{};
};

// `target(i)` is called before member i's data is read and returns a file descriptor to write
// the bytes to, or -1 to only check them. Every member must come back with the size and, where
// RECORD has one, the sha256 that `contents` holds; the archive must hold exactly the members
// of `contents` (it is the same file read again). Errors name `display` and the member.
using TargetFor = std::function<Result<int>(std::size_t member)>;
Result<std::vector<StreamedMember>> stream_members(ZipReader& zip, const WheelContents& contents,
                                                   const std::string& display,
                                                   const TargetFor& target);

// Hashes (sha256, CRC-32) and writes one member's bytes as they come, at consecutive offsets of
// `fd` (pwrite; -1: hash only). Errors name `what`.
class MemberSink {
 public:
  MemberSink(Sha256& hasher, int fd, const std::string& what)
      : m_hasher(hasher), m_fd(fd), m_what(what) {}

  Status consume(std::span<const std::byte> data);
  std::uint32_t crc() const { return m_crc; }
  std::uint64_t written() const { return m_written; }
  int fd() const { return m_fd; }

 private:
  Sha256& m_hasher;
  int m_fd;
  const std::string& m_what;
  std::uint32_t m_crc = 0;
  std::uint64_t m_written = 0;
};

}  // namespace venvfix::wheel::detail
