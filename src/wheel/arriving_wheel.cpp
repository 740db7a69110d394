// ArrivingWheel: one thread per downloading wheel follows the file as it grows (pread from the
// page cache the download just wrote) or, streamed, reads the bytes the download hands over
// through a ring (no file at all), walks the local headers in order and unpacks each member
// into the private directory. It gives up, never fails: the archive is read afterwards anyway.
#include "venvfix/wheel/arriving_wheel.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include <spdlog/spdlog.h>

#include "venvfix/base/byte_reader.hpp"
#include "venvfix/base/fs.hpp"
#include "wheel/member_name.hpp"
#include "wheel/member_pipe.hpp"
#include "wheel/member_stream.hpp"
#include "wheel/stream_inflate.hpp"
#include "wheel/zip_index.hpp"

namespace venvfix::wheel {

namespace {

using detail::k_central_sig;
using detail::k_eocd_sig;
using detail::k_local_sig;
using detail::k_local_size;

constexpr std::uint16_t k_stored = 0;
constexpr std::uint16_t k_deflated = 8;
// Compressed bytes are read back in pieces of this size (at most: less when less has arrived).
constexpr std::size_t k_read_piece = 1u << 20;
// A stream's bytes are read out of the ring in pieces of at most this size, each given back as
// soon as it is used, so that a paused download finds room again soon.
constexpr std::size_t k_stream_piece = 256u << 10;
// The downloading thread wakes the unpacker only every this many bytes (and at the end).
constexpr std::uint64_t k_wake_step = 512u << 10;
// Written bytes are handed to writeback in steps of this size.
constexpr std::uint64_t k_writeback_step = 32u << 20;
// Members at least this large are hashed and written on a second thread (detail::MemberPipe).
constexpr std::uint64_t k_piped_member = 8u << 20;

struct LocalHeader {
  std::uint16_t flags = 0;
  std::uint16_t method = 0;
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t size = 0;
  std::uint16_t name_len = 0;
  std::uint16_t extra_len = 0;
};

LocalHeader parse_local(const std::array<std::byte, k_local_size>& raw) {
  ByteReader h(raw);
  return LocalHeader{h.u16(6), h.u16(8), h.u32(14), h.u32(18), h.u32(22), h.u16(26), h.u16(28)};
}

}  // namespace

struct ArrivingWheel::State {
  State(fs::path d, std::uint64_t expected, const ReadLimits& l, SyncAhead::SyncFunction s)
      : dir(std::move(d)), expected_size(expected), limits(l), sync(std::move(s)) {}

  // One member's bytes on their way out (hashed, checked, written), with writeback started
  // every k_writeback_step bytes and the bytes so far handed to `ahead` to be synced: the
  // transaction makes the files durable before its journal names them, and started here, the
  // writeback and the disk's cache flushes overlap the download instead of following it.
  struct Output {
    Output(int file, const std::string& what, SyncAhead* sync_ahead)
        : sink(sha, file, what), ahead(sync_ahead), path(what) {}
    Status consume(std::span<const std::byte> data) {
      VENVFIX_TRY(sink.consume(data));
      if (sink.written() - synced >= k_writeback_step) start_writeback();
      return ok();
    }
    void start_writeback() {
      ::sync_file_range(sink.fd(), static_cast<off_t>(synced),
                        static_cast<off_t>(sink.written() - synced), SYNC_FILE_RANGE_WRITE);
      synced = sink.written();
      if (ahead != nullptr) ahead->add(sink.fd(), path);
    }
    Sha256 sha;
    detail::MemberSink sink;
    SyncAhead* ahead;  // none: the transaction syncs it all
    const std::string& path;
    std::uint64_t synced = 0;
  };

  // How far the file is: blocks until more than `offset` bytes are there; nullopt when no
  // more will come (the download ended, was restarted, or this object is going away).
  std::optional<std::uint64_t> wait_beyond(std::uint64_t offset) {
    std::unique_lock lock(mutex);
    arrived.wait(lock, [&] { return available > offset || total || given_up || stopping; });
    if (given_up || stopping || available <= offset) return std::nullopt;
    return available;
  }

  bool read_exact(std::uint64_t offset, std::span<std::byte> out) {
    if (streaming) {
      return follow(offset, out.size(), [&](std::span<const std::byte> piece) {
        std::copy(piece.begin(), piece.end(), out.begin());
        out = out.subspan(piece.size());
        return true;
      });
    }
    while (!out.empty()) {
      if (!wait_beyond(offset + out.size() - 1)) return false;
      const ssize_t n = ::pread(source.get(), out.data(), out.size(), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      out = out.subspan(static_cast<std::size_t>(n));
      offset += static_cast<std::uint64_t>(n);
    }
    return true;
  }

  // Feeds [offset, offset + length) to `piece_done` as it arrives.
  template <typename PieceFn>
  bool follow(std::uint64_t offset, std::uint64_t length, PieceFn&& piece_done) {
    if (streaming) return follow_ring(offset, length, piece_done);
    const std::uint64_t end = offset + length;
    while (offset < end) {
      const std::optional<std::uint64_t> now = wait_beyond(offset);
      if (!now) return false;
      const std::size_t want = static_cast<std::size_t>(
          std::min<std::uint64_t>({*now, end, offset + buffer.size()}) - offset);
      const ssize_t n = ::pread(source.get(), buffer.data(), want, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      if (!piece_done(std::span<const std::byte>(buffer.data(), static_cast<std::size_t>(n)))) {
        return false;
      }
      offset += static_cast<std::uint64_t>(n);
    }
    return true;
  }

  // follow() of a stream: the same pieces, out of the ring.
  template <typename PieceFn>
  bool follow_ring(std::uint64_t offset, std::uint64_t length, PieceFn& piece_done) {
    const std::uint64_t end = offset + length;
    bool used = true;
    while (used && offset < end) {
      if (!pull(offset, end - offset, [&](std::span<const std::byte> piece) {
            used = piece_done(piece);
            offset += piece.size();
          })) {
        return false;
      }
    }
    return used;
  }

  // Stream mode: hands the next bytes there are at `offset` (where the last read ended; at most
  // `max`, a span inside the ring) to `use`, writing them into the skeleton unless they are the
  // data of a member it leaves out; false when no more will come or the skeleton cannot be
  // written. The ring's bytes stay put until the reader has used them.
  template <typename Use>
  bool pull(std::uint64_t offset, std::uint64_t max, Use&& use) {
    const std::optional<std::uint64_t> now = wait_beyond(offset);
    if (!now || offset != ring_read) return false;
    const std::size_t at = static_cast<std::size_t>(offset % ring.size());
    const std::size_t n = static_cast<std::size_t>(
        std::min<std::uint64_t>({max, k_stream_piece, *now - offset, ring.size() - at}));
    const std::span<const std::byte> piece(ring.data() + at, n);
    if (skeleton_data && !write_skeleton(piece, offset)) return false;
    use(piece);
    std::lock_guard lock(mutex);
    ring_read += n;
    return true;
  }

  bool write_skeleton(std::span<const std::byte> piece, std::uint64_t offset) {
    while (!piece.empty()) {
      const ssize_t n =
          ::pwrite(skeleton_fd.get(), piece.data(), piece.size(), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      piece = piece.subspan(static_cast<std::size_t>(n));
      offset += static_cast<std::uint64_t>(n);
    }
    return true;
  }

  // Stream mode, after the last member: the central directory and the end records into the
  // skeleton, up to the download's last byte.
  bool read_tail(std::uint64_t offset) {
    skeleton_data = true;
    while (pull(offset, k_read_piece,
                [&](std::span<const std::byte> piece) { offset += piece.size(); })) {
    }
    std::lock_guard lock(mutex);
    return total && offset == *total && !given_up;
  }

  using Sink = detail::StreamInflater::Sink;

  bool copy_stored(std::uint64_t offset, const LocalHeader& header, const Sink& out) {
    if (header.compressed_size != header.size) return false;
    return follow(offset, header.compressed_size,
                  [&](std::span<const std::byte> piece) { return bool(out(piece)); });
  }

  // Inflates into `out`, or with a pipe straight into the pipe's ring (no copy on the way).
  bool inflate(std::uint64_t offset, const LocalHeader& header, const Sink& out,
               detail::MemberPipe* pipe) {
    inflater->start(header.size);
    std::optional<detail::StreamInflater::Target> into_pipe;
    if (pipe != nullptr) {
      into_pipe.emplace(detail::StreamInflater::Target{[pipe] { return pipe->next_slot(); },
                                                       [pipe](std::size_t n) -> Status {
                                                         pipe->commit(n);
                                                         return ok();
                                                       }});
    }
    bool finished = false;
    const bool read = follow(offset, header.compressed_size, [&](std::span<const std::byte> piece) {
      if (finished) return false;  // bytes after the end of the stream: not this reader's zip
      auto step = into_pipe ? inflater->feed(piece, *into_pipe) : inflater->feed(piece, out);
      if (!step || step->outcome.failure != detail::InflateFailure::none) return false;
      finished = step->finished;
      return !finished || step->consumed == piece.size();
    });
    return read && finished;
  }

  // Unpacks the member whose local header is at `offset`; returns the next header's offset.
  // `raw` holds the header's signature: the rest is read after it, so that a stream is read
  // strictly forward.
  std::optional<std::uint64_t> unpack_member(std::uint64_t offset, std::size_t sequence,
                                             std::array<std::byte, k_local_size>& raw) {
    if (!read_exact(offset + 4, std::span<std::byte>(raw).subspan(4))) return std::nullopt;
    LocalHeader header = parse_local(raw);
    // Encrypted, or sizes only in a data descriptor after the bytes: the archive is read instead.
    if ((header.flags & 0x0009) != 0) return std::nullopt;
    std::vector<std::byte> name_extra(std::size_t{header.name_len} + header.extra_len);
    if (!read_exact(offset + k_local_size, name_extra)) return std::nullopt;
    ByteReader fields(name_extra);
    if (!detail::apply_zip64(fields, header.name_len, header.extra_len, header.size,
                             header.compressed_size, nullptr)) {
      return std::nullopt;
    }
    const std::string_view stored(reinterpret_cast<const char*>(name_extra.data()),
                                  header.name_len);
    ArrivedMember member;
    member.name = (header.flags & 0x800) != 0 ? std::string(stored) : detail::cp437_to_utf8(stored);
    member.data_offset = offset + k_local_size + name_extra.size();
    member.method = header.method;
    member.crc32 = header.crc32;
    member.compressed_size = header.compressed_size;
    member.size = header.size;
    const std::uint64_t next = member.data_offset + header.compressed_size;
    if (member.name.ends_with('/')) return next;  // a directory entry: read_wheel checks those
    declared += header.size;
    if (members.size() >= limits.max_members || declared > output_cap()) return std::nullopt;
    if (header.method != k_stored && header.method != k_deflated) return std::nullopt;
    member.file = dir / std::to_string(sequence);
    Fd fd(::open(member.file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd.valid()) return std::nullopt;
    const std::string what = member.file.string();
    Output out(fd.get(), what, ahead ? &*ahead : nullptr);
    // A large member is hashed and written on a second thread while this one inflates it.
    std::optional<detail::MemberPipe> pipe;
    if (header.size >= k_piped_member) {
      try {
        pipe.emplace([&out](std::span<const std::byte> bytes) { return out.consume(bytes); });
      } catch (const std::system_error&) {  // `pipe` stays empty: this thread does it all
      }
    }
    const Sink sink = [&](std::span<const std::byte> bytes) {
      return pipe ? pipe->push(bytes) : out.consume(bytes);
    };
    // The skeleton keeps what read_wheel reads: the metadata in *.dist-info, not the rest.
    skeleton_data = in_dist_info(member.name);
    bool read = header.method == k_stored
                    ? copy_stored(member.data_offset, header, sink)
                    : inflate(member.data_offset, header, sink, pipe ? &*pipe : nullptr);
    skeleton_data = true;
    if (pipe) read = read && bool(pipe->finish());  // `out` is this thread's again
    if (!read || out.sink.written() != header.size || out.sink.crc() != header.crc32) {
      return std::nullopt;
    }
    out.start_writeback();
    member.sha256 = out.sha.finish();
    members.push_back(std::move(member));
    return next;
  }

  // What read_wheel would allow the members to add up to for a wheel of the plan's size.
  std::uint64_t output_cap() const {
    if (expected_size == 0) return limits.max_total_bytes;
    return std::min(limits.max_total_bytes,
                    std::max(limits.ratio_floor_bytes, limits.max_ratio * expected_size));
  }

  // Every member up to the central directory; false when the walk has to stop short.
  bool unpack_all() {
    inflater = std::make_unique<detail::StreamInflater>();
    if (!streaming) buffer.resize(k_read_piece);  // a stream is read out of its ring
    std::error_code error;
    if (!fs::create_directory(dir, error)) return false;
    try {
      ahead.emplace(sync);
    } catch (const std::system_error&) {  // no thread: the transaction syncs it all at the end
    }
    if (streaming && !open_skeleton()) return false;
    std::uint64_t offset = 0;
    for (std::size_t sequence = 0;; ++sequence) {
      std::array<std::byte, k_local_size> raw{};
      if (!read_exact(offset, std::span<std::byte>(raw).first(4))) return false;
      const std::uint32_t sig = ByteReader(raw).u32(0);
      if (sig == k_central_sig || sig == k_eocd_sig) return !streaming || read_tail(offset + 4);
      if (sig != k_local_sig) return false;
      const std::optional<std::uint64_t> next = unpack_member(offset, sequence, raw);
      if (!next) return false;
      offset = *next;
    }
  }

  bool open_skeleton() {
    skeleton_path = dir / "wheel.whl";
    skeleton_fd = Fd(::open(skeleton_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    return skeleton_fd.valid();
  }

  static bool in_dist_info(std::string_view name) {
    const std::size_t slash = name.find('/');
    return slash != std::string_view::npos && name.substr(0, slash).ends_with(".dist-info");
  }

  // Without a thread to unpack on, a streamed wheel is kept whole in `dir`/wheel.whl as it
  // arrives (on the downloading thread; the caller holds `mutex`), and its archive is read from
  // there once complete instead of being downloaded again. False when that file cannot be made.
  bool start_spill() {
    std::error_code error;
    if (!fs::create_directory(dir, error)) return false;
    dir_made = true;
    spill_path = dir / "wheel.whl";
    spill = Fd(::open(spill_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!spill.valid()) return false;
    spdlog::debug("{}: no thread to unpack it on; kept whole as it arrives", dir.string());
    return true;
  }

  // The spill's next bytes; a failed write gives the wheel up (it is then downloaded again).
  void spill_bytes(std::span<const std::byte> bytes) {
    if (const Status written = write_all(spill.get(), bytes, spill_path.string()); !written) {
      spdlog::debug("{}; the wheel is downloaded again", written.error().message);
      spill = Fd();
      given_up = true;
      return;
    }
    available += bytes.size();
  }

  // Starts the unpacking thread (the caller holds `mutex`). std::thread reports a refused
  // thread only by throwing: the archive is then read as before.
  bool start() {
    try {
      thread = std::thread([this] { run(); });
    } catch (const std::system_error&) {
      return false;
    }
    started = true;
    return true;
  }

  void run() {
    const bool complete = unpack_all();
    inflater.reset();
    buffer = {};
    std::lock_guard lock(mutex);
    source = Fd();
    if (!complete && !given_up) {
      spdlog::debug("{}: not unpacked while downloading; the archive is read instead",
                    dir.string());
    }
    if (!complete) {
      given_up = true;  // from now on a writer's bytes are dropped
      skeleton_path.clear();
    }
    skeleton_fd = Fd();
    std::vector<std::byte>().swap(ring);  // a writer no longer touches it: given up or total set
    done = true;
    ended.notify_all();
  }

  fs::path dir;
  bool dir_made = false;  // by start_spill; the thread makes it otherwise
  std::uint64_t expected_size;
  ReadLimits limits;
  SyncAhead::SyncFunction sync;
  Fd source;             // a duplicate of the download's descriptor, while the thread runs
  bool started = false;  // the thread was started (and `dir` perhaps created)
  std::uint64_t declared = 0;
  // The thread's, allocated when it starts: a plan's wheels all have an object from the start.
  std::unique_ptr<detail::StreamInflater> inflater;
  // The members' data synced while the download goes on (SyncAhead); drained by finish().
  std::optional<SyncAhead> ahead;
  std::vector<std::byte> buffer;
  std::vector<ArrivedMember> members;  // the thread's until `done`

  // Stream mode (write()): the bytes come through `ring` (bytes [ring_read, available) of the
  // wheel wait there), and what read_wheel needs is kept in the skeleton.
  bool streaming = false;
  std::vector<std::byte> ring;
  std::uint64_t ring_read = 0;
  fs::path skeleton_path;  // the thread's until `done`; empty when given up
  Fd skeleton_fd;
  bool skeleton_data = true;  // the bytes read now go into the skeleton
  // Stream mode without a thread (start_spill): the whole wheel, written as it arrives.
  Fd spill;
  fs::path spill_path;

  std::mutex mutex;
  std::condition_variable arrived;  // more bytes, the end, or stop
  std::condition_variable ended;    // the thread is done
  std::uint64_t available = 0;
  std::uint64_t woken_at = 0;  // `available` at the last wake-up (downloading thread only)
  std::optional<std::uint64_t> total;
  bool given_up = false;
  bool stopping = false;
  bool done = false;
  std::thread thread;
};

ArrivingWheel::ArrivingWheel(fs::path dir, std::uint64_t expected_size, const ReadLimits& limits,
                             SyncAhead::SyncFunction sync)
    : m_state(std::make_unique<State>(std::move(dir), expected_size, limits, std::move(sync))) {}

ArrivingWheel::~ArrivingWheel() {
  State& s = *m_state;
  {
    std::lock_guard lock(s.mutex);
    s.stopping = true;
    s.arrived.notify_all();
  }
  if (s.thread.joinable()) s.thread.join();
  s.ahead.reset();  // before its files go
  s.spill = Fd();
  std::error_code ignored;
  if (s.started || s.dir_made) fs::remove_all(s.dir, ignored);
}

void ArrivingWheel::stored(int fd, std::uint64_t stored) {
  State& s = *m_state;
  std::unique_lock lock(s.mutex);
  if (s.given_up || s.total) return;
  if (stored < s.available) {  // the stored bytes were dropped: what was unpacked is stale
    s.given_up = true;
    s.arrived.notify_all();
    return;
  }
  s.available = stored;
  if (!s.started && stored > 0) {  // a retry before the first byte reports 0: nothing to follow
    s.source = Fd(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!s.source.valid() || !s.start()) {
      s.source = Fd();
      s.given_up = true;
      return;
    }
  }
  if (stored - s.woken_at >= k_wake_step) {
    s.woken_at = stored;
    s.arrived.notify_all();
  }
}

bool ArrivingWheel::write(std::span<const std::byte> bytes) {
  State& s = *m_state;
  std::lock_guard lock(s.mutex);
  if (s.given_up || s.stopping || s.total || bytes.empty()) return true;
  if (!s.started && !s.spill.valid()) {
    s.streaming = true;
    s.ring.resize(k_ring_bytes);
    if (!s.start()) {
      std::vector<std::byte>().swap(s.ring);
      if (!s.start_spill()) s.given_up = true;
    }
  }
  if (s.spill.valid()) {
    s.spill_bytes(bytes);
    return true;
  }
  if (s.given_up) return true;
  if (bytes.size() > s.ring.size()) {  // would never fit: the archive is read instead
    s.given_up = true;
    s.arrived.notify_all();
    return true;
  }
  const std::size_t free = s.ring.size() - static_cast<std::size_t>(s.available - s.ring_read);
  if (bytes.size() > free) return false;
  while (!bytes.empty()) {  // at most two copies: up to the ring's end, then from its start
    const std::size_t at = static_cast<std::size_t>(s.available % s.ring.size());
    const std::size_t n = std::min(bytes.size(), s.ring.size() - at);
    std::copy_n(bytes.begin(), n, s.ring.begin() + static_cast<std::ptrdiff_t>(at));
    s.available += n;
    bytes = bytes.subspan(n);
  }
  s.arrived.notify_all();
  return true;
}

bool ArrivingWheel::can_take(std::size_t size) const {
  State& s = *m_state;
  std::lock_guard lock(s.mutex);
  if (s.given_up || s.stopping || s.total || !s.started) return true;
  return size <= s.ring.size() - static_cast<std::size_t>(s.available - s.ring_read);
}

void ArrivingWheel::restart() {
  State& s = *m_state;
  std::lock_guard lock(s.mutex);
  s.given_up = true;
  s.arrived.notify_all();
}

const fs::path& ArrivingWheel::skeleton() const {
  return m_state->skeleton_path;
}

const std::vector<ArrivedMember>& ArrivingWheel::finish(std::uint64_t total) {
  State& s = *m_state;
  std::unique_lock lock(s.mutex);
  if (!s.started) {
    // Kept whole (no thread): the archive is the wheel's bytes, checked by the download, once
    // they are all there. Else nothing arrived. s.members is and stays empty.
    if (s.spill.valid() && !s.given_up && s.available == total) {
      s.skeleton_path = s.spill_path;
    } else {
      s.given_up = true;
    }
    s.spill = Fd();
    return s.members;
  }
  if (!s.total) {
    if (total != s.available) s.given_up = true;  // not the bytes this thread saw
    s.total = total;
    s.arrived.notify_all();
  }
  s.ended.wait(lock, [&] { return s.done; });
  if (!s.given_up && s.ahead) {
    // A failed background sync may be the only report of the disk's error: these files are
    // not used then (the archive is read and written again, with its own durability).
    lock.unlock();
    const Status synced = s.ahead->drain();
    lock.lock();
    if (!synced) {
      spdlog::warn("{}; the archive is read instead", synced.error().message);
      s.given_up = true;
    }
  }
  if (s.given_up) {
    s.members.clear();
    s.skeleton_path.clear();
  }
  return s.members;
}

}  // namespace venvfix::wheel
