#include "wheel/parallel_unpack.hpp"

#include <libdeflate.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "venvfix/base/parallel.hpp"
#include "wheel/stream_inflate.hpp"
#include "wheel/zip_reader.hpp"

namespace venvfix::wheel::detail {

namespace {

constexpr std::uint16_t k_stored = 0;
constexpr std::uint16_t k_deflated = 8;
// Archive bytes read are dropped from the mapping (see release()) in pieces of this size, and
// not at all below the smaller one (a madvise call is not worth it).
constexpr std::size_t k_release_step = 8u << 20;
constexpr std::size_t k_release_min = 1u << 20;

struct Decompressor {
  Decompressor() : d(libdeflate_alloc_decompressor()) {}
  ~Decompressor() {
    if (d != nullptr) libdeflate_free_decompressor(d);
  }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;
  libdeflate_decompressor* d;
};

// Inflate buffers outlive one install_wheel call: a plan installs several wheels, and fresh
// pages cost a fault each (dear in a virtual machine). Mapped with MADV_HUGEPAGE, so that
// where transparent huge pages are allowed a fault brings 2 MiB instead of 4 KiB.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept
      : m_data(std::exchange(other.m_data, nullptr)), m_size(std::exchange(other.m_size, 0)) {}
  Buffer& operator=(Buffer&& other) noexcept {
    std::swap(m_data, other.m_data);
    std::swap(m_size, other.m_size);
    return *this;
  }
  ~Buffer() {
    if (m_data != nullptr) ::munmap(m_data, m_size);
  }
  static Buffer map(std::size_t size) {
    constexpr std::size_t k_huge = 2u << 20;
    size = (std::max<std::size_t>(size, 1) + k_huge - 1) / k_huge * k_huge;
    void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    Buffer out;
    if (data == MAP_FAILED) return out;
    ::madvise(data, size, MADV_HUGEPAGE);
    out.m_data = static_cast<std::byte*>(data);
    out.m_size = size;
    return out;
  }
  std::byte* data() const { return m_data; }
  std::size_t size() const { return m_size; }

 private:
  std::byte* m_data = nullptr;
  std::size_t m_size = 0;
};

class BufferPool {
 public:
  // A buffer of at least `size` bytes (an empty one when memory is short); the largest idle
  // one is taken and grown when it is too small.
  Buffer take(std::size_t size) {
    Buffer out;
    {
      std::lock_guard lock(m_mutex);
      auto largest = std::max_element(m_idle.begin(), m_idle.end(),
                                      [](auto& a, auto& b) { return a.size() < b.size(); });
      if (largest != m_idle.end()) {
        out = std::move(*largest);
        m_idle.erase(largest);
      }
    }
    if (out.size() < size) {
      out = Buffer();  // the old one goes first: the peak is the larger, not the sum
      out = Buffer::map(size);
    }
    return out;
  }
  // Keeps the buffer for the next wheel unless the pool holds enough already (then it is
  // unmapped, outside the lock).
  void give_back(Buffer buffer) {
    if (buffer.size() == 0) return;
    std::lock_guard lock(m_mutex);
    std::size_t idle = 0;
    for (const Buffer& b : m_idle) idle += b.size();
    if (m_idle.size() < k_max_idle && idle + buffer.size() <= k_max_idle_bytes) {
      m_idle.push_back(std::move(buffer));
    }
  }

 private:
  static constexpr std::size_t k_max_idle = 8;
  static constexpr std::size_t k_max_idle_bytes = std::size_t{64} << 20;
  std::mutex m_mutex;
  std::vector<Buffer> m_idle;
};

BufferPool& buffer_pool() {
  static BufferPool* pool = new BufferPool();  // never destroyed: threads may outlive main
  return *pool;
}

// One thread's tools: two decompressors, a hasher and an output buffer from the pool.
struct Worker {
  Decompressor decompressor;
  StreamInflater inflater;
  Sha256 hasher;
  Buffer buffer;

  ~Worker() { buffer_pool().give_back(std::move(buffer)); }
  std::byte* reserve(std::size_t size) {
    static std::byte empty[1];
    if (size == 0) return empty;  // an empty member: libdeflate still wants somewhere to point
    if (buffer.size() < size) {
      buffer_pool().give_back(std::move(buffer));
      buffer = buffer_pool().take(size);
    }
    return buffer.size() < size ? nullptr : buffer.data();
  }
};

class Unpacker {
 public:
  Unpacker(std::span<const std::byte> archive, const WheelContents& contents,
           const std::vector<ZipIndexEntry>& entries, const std::vector<std::size_t>& match,
           const std::string& display, const CreateFor& create, const UnpackConfig& config)
      : m_archive(archive),
        m_contents(contents),
        m_entries(entries),
        m_match(match),
        m_display(display),
        m_create(create),
        m_config(config),
        m_out(contents.members.size()) {}

  Result<std::vector<StreamedMember>> run() {
    plan_jobs();
    // One decompressor, hasher and buffer per thread, indexed by the pool's worker number.
    const std::size_t threads = parallel_workers(m_jobs.size(), std::max(m_config.threads, 1u));
    std::unique_ptr<Worker[]> workers(new Worker[std::max<std::size_t>(threads, 1)]);
    VENVFIX_TRY(
        run_parallel(m_jobs.size(), threads, [&](std::size_t next, const JobContext& context) {
          const Job& job = m_jobs[next];
          Worker& worker = workers[context.worker()];
          return job.member ? unpack_one(worker, *job.member) : stream_rest(worker, context);
        }));
    return std::move(m_out);
  }

 private:
  // A job is one member inflated in memory (or copied), or the single pass of libarchive over
  // every other member. Jobs go largest first, so the last to finish are the small ones.
  struct Job {
    std::uint64_t weight = 0;
    std::optional<std::size_t> member;  // nullopt: the libarchive pass
  };

  // Stored and deflate members (every member of a real wheel) are jobs of their own.
  bool fast(std::size_t i) const {
    const std::uint16_t method = m_entries[m_match[i]].method;
    return method == k_stored || method == k_deflated;
  }

  void plan_jobs() {
    Job pass;
    for (std::size_t i = 0; i < m_contents.members.size(); ++i) {
      if (fast(i)) {
        m_jobs.push_back(Job{m_contents.members[i].size + 4096, i});
      } else {
        m_streamed.emplace(m_contents.members[i].name, i);
        pass.weight += m_contents.members[i].size + 4096;
      }
    }
    if (!m_streamed.empty()) m_jobs.push_back(pass);
    std::stable_sort(m_jobs.begin(), m_jobs.end(),
                     [](const Job& a, const Job& b) { return a.weight > b.weight; });
  }

  std::string what(std::size_t i) const {
    return fmt::format("{}: member {}", m_display, m_contents.members[i].name);
  }

  // The checks every member passes, whichever way it was read.
  Status check(std::size_t i, std::uint64_t got, const Sha256Digest& digest,
               std::optional<std::uint32_t> crc) {
    const WheelMember& member = m_contents.members[i];
    if (got != member.size) {
      return make_error(ExitCode::usage,
                        "{}: member {} holds {} bytes but its header and RECORD say {}; the "
                        "wheel is refused",
                        m_display, member.name, got, member.size);
    }
    if (crc && *crc != m_entries[m_match[i]].crc32) {
      return make_error(ExitCode::usage,
                        "{}: member {} fails its zip CRC-32 check; the wheel is refused", m_display,
                        member.name);
    }
    if (member.sha256 && *member.sha256 != digest) {
      return make_error(ExitCode::usage,
                        "{}: member {} does not match its sha256 in RECORD; the wheel is refused",
                        m_display, member.name);
    }
    m_out[i].sha256 = digest;
    return ok();
  }

  // Drops the pages of archive bytes already read from this process's mapping (they stay in
  // the page cache): otherwise every byte of the wheel read counts in the resident set, and a
  // 2 GB wheel would cost 2 GB of it. Only whole pages inside `bytes` are dropped.
  void release(std::span<const std::byte> bytes) const {
    if (!m_config.release_input || bytes.size() < k_release_min) return;
    static const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data());
    const std::uintptr_t first = (begin + page - 1) / page * page;
    const std::uintptr_t last = (begin + bytes.size()) / page * page;
    if (last <= first) return;
    // The page-aligned address as an offset into `bytes` (no integer-to-pointer cast).
    auto* start = const_cast<std::byte*>(bytes.data()) + (first - begin);
    ::madvise(start, last - first, MADV_DONTNEED);
  }

  std::span<const std::byte> packed_bytes(std::size_t i) const {
    const ZipIndexEntry& entry = m_entries[m_match[i]];
    return m_archive.subspan(static_cast<std::size_t>(entry.data_offset),
                             static_cast<std::size_t>(entry.compressed_size));
  }

  // Creates member i's file, sized first: one extent to fill rather than a file that grows
  // with every write.
  Result<Fd> create_sized(std::size_t i, std::uint64_t size) {
    VENVFIX_TRY_ASSIGN(Fd fd, m_create(i));
    if (fd.valid() && size != 0 && ::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
      return make_error(ExitCode::error, "{}: {}", what(i), errno_message(errno));
    }
    return fd;
  }

  Status unpack_one(Worker& worker, std::size_t i) {
    const ZipIndexEntry& entry = m_entries[m_match[i]];
    if (entry.method == k_stored) return copy_stored(worker, i);
    if (entry.size <= m_config.max_buffer_bytes) return inflate_whole(worker, i);
    return inflate_streamed(worker, i);
  }

  // A stored member: read straight from the mapping, in pieces dropped once written.
  Status copy_stored(Worker& worker, std::size_t i) {
    const WheelMember& member = m_contents.members[i];
    const std::span<const std::byte> packed = packed_bytes(i);
    if (packed.size() > member.size) {
      return make_error(ExitCode::usage,
                        "{}: member {} holds more bytes than its recorded size ({})", m_display,
                        member.name, member.size);
    }
    VENVFIX_TRY_ASSIGN(Fd fd, create_sized(i, packed.size()));
    const std::string where = what(i);
    MemberSink sink(worker.hasher, fd.get(), where);
    for (std::size_t at = 0; at < packed.size(); at += k_release_step) {
      const auto piece = packed.subspan(at, std::min(k_release_step, packed.size() - at));
      VENVFIX_TRY(sink.consume(piece));
      release(piece);
    }
    return check(i, sink.written(), worker.hasher.finish(), sink.crc());
  }

  // A small deflate member: inflated whole by libdeflate into the thread's buffer.
  Status inflate_whole(Worker& worker, std::size_t i) {
    const WheelMember& member = m_contents.members[i];
    const std::span<const std::byte> packed = packed_bytes(i);
    std::byte* out = worker.reserve(static_cast<std::size_t>(member.size));
    if (out == nullptr) {
      return make_error(ExitCode::error, "{}: member {}: out of memory for {} bytes", m_display,
                        member.name, member.size);
    }
    std::size_t got = 0;
    libdeflate_result rc =
        libdeflate_deflate_decompress_ex(worker.decompressor.d, packed.data(), packed.size(), out,
                                         static_cast<std::size_t>(member.size), nullptr, &got);
    release(packed);
    if (rc == LIBDEFLATE_INSUFFICIENT_SPACE) return too_long(i);
    if (rc != LIBDEFLATE_SUCCESS) return corrupt(i);
    VENVFIX_TRY_ASSIGN(Fd fd, create_sized(i, got));
    const std::string where = what(i);
    MemberSink sink(worker.hasher, fd.get(), where);
    VENVFIX_TRY(sink.consume({out, got}));
    return check(i, sink.written(), worker.hasher.finish(), sink.crc());
  }

  // A larger deflate member: streamed through ISA-L in fixed pieces, each hashed and written
  // as it comes, so memory does not grow with the member.
  Status inflate_streamed(Worker& worker, std::size_t i) {
    const WheelMember& member = m_contents.members[i];
    VENVFIX_TRY_ASSIGN(Fd fd, create_sized(i, member.size));
    const std::string where = what(i);
    MemberSink sink(worker.hasher, fd.get(), where);
    VENVFIX_TRY_ASSIGN(InflateOutcome outcome,
                       worker.inflater.run(
                           packed_bytes(i), member.size,
                           [&](std::span<const std::byte> piece) { return sink.consume(piece); },
                           [&](std::span<const std::byte> done) { release(done); }));
    switch (outcome.failure) {
      case InflateFailure::none:
        break;
      case InflateFailure::too_long:
        return too_long(i);
      case InflateFailure::corrupt:
        return corrupt(i);
      case InflateFailure::truncated:
        return make_error(ExitCode::usage,
                          "{}: member {} ends before its deflate stream does (the archive is "
                          "truncated or damaged); the wheel is refused",
                          m_display, member.name);
    }
    return check(i, sink.written(), worker.hasher.finish(), sink.crc());
  }

  Error too_long(std::size_t i) const {
    return make_error(ExitCode::usage, "{}: member {} holds more bytes than its recorded size ({})",
                      m_display, m_contents.members[i].name, m_contents.members[i].size);
  }
  Error corrupt(std::size_t i) const {
    return make_error(ExitCode::usage,
                      "{}: member {} has a corrupt deflate stream; the wheel is refused", m_display,
                      m_contents.members[i].name);
  }

  // Every member the fast path does not take, in one pass of libarchive in archive order.
  Status stream_rest(Worker& worker, const JobContext& context) {
    VENVFIX_TRY_ASSIGN(ZipReader zip, ZipReader::open_memory(m_archive, m_display));
    std::size_t seen = 0;
    while (seen < m_streamed.size()) {
      if (context.stopping()) return ok();  // another member failed: its error is the answer
      VENVFIX_TRY_ASSIGN(std::optional<ZipEntry> entry, zip.next());
      if (!entry) break;
      auto it = m_streamed.find(entry->name);
      if (it == m_streamed.end() || entry->type == EntryType::directory) continue;
      const std::size_t i = it->second;
      ++seen;
      VENVFIX_TRY_ASSIGN(Fd fd, m_create(i));
      const std::string where = what(i);
      MemberSink sink(worker.hasher, fd.get(), where);
      VENVFIX_TRY_ASSIGN(
          std::uint64_t got,
          zip.read_data(m_contents.members[i].name, m_contents.members[i].size,
                        [&](std::span<const std::byte> block) { return sink.consume(block); }));
      VENVFIX_TRY(check(i, got, worker.hasher.finish(), sink.crc()));
    }
    if (seen != m_streamed.size()) {
      return make_error(ExitCode::usage,
                        "{}: the archive holds fewer members than when it was checked; the wheel "
                        "is refused",
                        m_display);
    }
    return ok();
  }

  std::span<const std::byte> m_archive;
  const WheelContents& m_contents;
  const std::vector<ZipIndexEntry>& m_entries;
  const std::vector<std::size_t>& m_match;
  const std::string& m_display;
  const CreateFor& m_create;
  const UnpackConfig& m_config;
  std::vector<StreamedMember> m_out;
  std::vector<Job> m_jobs;
  std::unordered_map<std::string_view, std::size_t> m_streamed;  // name -> member
};

}  // namespace

Result<std::vector<StreamedMember>> unpack_members(
    std::span<const std::byte> archive, const WheelContents& contents,
    const std::vector<ZipIndexEntry>& entries, const std::vector<std::size_t>& match,
    const std::string& display, const CreateFor& create, const UnpackConfig& config) {
  Unpacker unpacker(archive, contents, entries, match, display, create, config);
  return unpacker.run();
}

unsigned unpack_threads(const WheelContents& contents, unsigned requested) {
  unsigned threads = requested;
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  // A thread is worth it for about 4 MiB of output; pip's own wheel (11 MB) gets two or three.
  std::uint64_t by_size = contents.total_size / (4u << 20) + 1;
  return static_cast<unsigned>(std::min<std::uint64_t>(threads, by_size));
}

}  // namespace venvfix::wheel::detail
