// Unpacking a wheel while it downloads. A zip's local headers come before their members' bytes,
// so each member can be inflated, hashed (sha256 and the zip CRC) and written as soon as its
// bytes are on disk, instead of after the whole wheel is (uv does the same). Nothing here is
// trusted: the members land in a private directory under names of their own (never the
// archive's paths), and install_wheel adopts them (InstallOptions::arriving) only once the
// download is complete and its sha256 checked, and only where every member agrees with the
// central directory (name, offset, method, sizes, CRC) and with RECORD (size and sha256).
// Anything else — a layout this reader does not follow, a restarted download, a member that
// inflates past its header's size — makes it give up quietly, and install_wheel reads the
// archive as it always did (which words the refusal, if there is one).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/base/sync_ahead.hpp"
#include "venvfix/wheel/wheel.hpp"

namespace venvfix::wheel {

// One member unpacked as it arrived, as its local header describes it.
struct ArrivedMember {
  std::string name;  // decoded as the central directory's names are (UTF-8 flag, else CP437)
  std::uint64_t data_offset = 0;  // of its compressed bytes in the wheel
  std::uint16_t method = 0;
  std::uint32_t crc32 = 0;  // from the header; the bytes written have it
  std::uint64_t compressed_size = 0;
  std::uint64_t size = 0;  // from the header; exactly this many bytes were written
  Sha256Digest sha256{};   // of the bytes written
  fs::path file;           // where they are (mode 0600 until adopted)
};

class ArrivingWheel {
 public:
  // Members go into `dir`, created on the first bytes (it must not exist; its parent must be
  // on the staging directory's filesystem so that adopting a member is a rename). `expected_size`
  // (the wheel's size from the plan, 0 when unknown) bounds what may be inflated as read_wheel
  // bounds it: `limits`.
  // `sync`: what makes a member's data durable on SyncAhead's thread while the download goes on
  // (fdatasync; a test makes it fail). Members whose sync failed are not adopted.
  ArrivingWheel(fs::path dir, std::uint64_t expected_size, const ReadLimits& limits = {},
                SyncAhead::SyncFunction sync = SyncAhead::default_sync());
  // Stops the unpacking thread and removes `dir` with every member not adopted.
  ~ArrivingWheel();
  ArrivingWheel(const ArrivingWheel&) = delete;
  ArrivingWheel& operator=(const ArrivingWheel&) = delete;

  // Two ways to be fed, one per object: from the download's file (stored()), or with the bytes
  // themselves (write()/restart(), fetch::BodyStream), when no file is written at all.

  // fetch::DownloadRequest::on_stored: the download's file `fd` now holds bytes [0, stored);
  // 0 after bytes were stored means they were dropped (the download starts over), and the
  // members unpacked so far are given up. Cheap: called on the downloading thread.
  void stored(int fd, std::uint64_t stored);

  // fetch::BodyStream::write: the wheel's next bytes. They wait in a ring of k_ring_bytes until
  // the unpacking thread has read them: false (nothing taken) while the ring has no room for all
  // of them. Once the unpacking has given up they are dropped (true).
  bool write(std::span<const std::byte> bytes);
  // fetch::BodyStream::can_take: whether write() would now take `size` bytes.
  bool can_take(std::size_t size) const;
  // fetch::BodyStream::restart: the bytes written were void; the members unpacked so far are
  // given up.
  void restart();
  static constexpr std::size_t k_ring_bytes = 8u << 20;

  // After finish(), for a wheel fed with write(): a file of the wheel's size holding its local
  // headers, its *.dist-info members and its central directory, with holes where the other
  // members' bytes were (a sparse file). read_wheel reads it as the wheel (it reads no other
  // member's bytes) so that install_wheel can check the arrived members against it and adopt
  // them; reading any other member's bytes from it fails their CRC or hash. Where no thread
  // could start to unpack it (a process at its pids limit), the whole wheel instead, written as
  // it arrived, which install_wheel reads as the archive. Empty when nothing was unpacked.
  const fs::path& skeleton() const;

  // The download is complete with `total` bytes: waits until every member is unpacked and
  // returns them, in archive order. Empty when nothing arrived (a cached or file:// wheel) or the
  // unpacking gave up.
  const std::vector<ArrivedMember>& finish(std::uint64_t total);

 private:
  struct State;
  std::unique_ptr<State> m_state;
};

}  // namespace venvfix::wheel
