// File checks: a parallel stat pass, cache lookups, a parallel hash pass over the rest.
#include "venvfix/dist/file_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>
#include <thread>
#include <unordered_map>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/parallel.hpp"

namespace venvfix::dist {

namespace {

constexpr std::size_t k_read_buffer = 1u << 20;

unsigned worker_count(std::size_t jobs) {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::min<std::size_t>(cores, std::max<std::size_t>(jobs, 1)));
}

// Runs job(i) for i in [0, count) on `threads` threads (the caller's included).
template <typename Job>
void parallel_for(std::size_t count, std::size_t min_per_thread, Job job) {
  unsigned threads = worker_count(count / std::max<std::size_t>(min_per_thread, 1));
  // The jobs cannot fail: a file's problem is its state, not an error.
  (void)run_parallel(count, threads, [&](std::size_t i, const JobContext&) {
    job(i);
    return ok();
  });
}

// What the stat pass learned about one distinct path. Kept small: a torch-sized venv has
// 30,000 of them, and fresh memory costs page faults.
struct Probe {
  PathTable::Id path = 0;
  int dir_fd = AT_FDCWD;       // the site-packages directory, when the path lies under it
  std::uint32_t relative = 0;  // offset in the path of the part relative to dir_fd
  bool want_hash = false;
  bool hashed = false;
  FileState state = FileState::ok;
  FileIdentity identity;
  std::int64_t hashed_at_ns = 0;
  std::optional<Sha256Digest> digest;
};

void stat_probe(const PathTable& paths, Probe& probe) {
  struct stat st {};
  // Relative to the open site-packages directory: the kernel walks 2-3 components instead of
  // the whole absolute path, which is most of the cost of 30,000 stats.
  if (::fstatat(probe.dir_fd, paths.c_str(probe.path) + probe.relative, &st, 0) != 0) {
    probe.state =
        (errno == ENOENT || errno == ENOTDIR) ? FileState::missing : FileState::unreadable;
    return;
  }
  probe.identity = file_identity_from(st);
  if (!S_ISREG(st.st_mode)) probe.state = FileState::not_regular;
}

}  // namespace

std::string_view to_string(FileState state) {
  switch (state) {
    case FileState::ok:
      return "ok";
    case FileState::missing:
      return "missing";
    case FileState::size_mismatch:
      return "size-mismatch";
    case FileState::hash_mismatch:
      return "hash-mismatch";
    case FileState::not_regular:
      return "not-regular";
    case FileState::unreadable:
      return "unreadable";
  }
  return "unknown";
}

Result<Sha256Digest> hash_file(const fs::path& path, std::uint64_t* bytes_read) {
  VENVFIX_TRY_ASSIGN(Fd fd, open_file(path, O_RDONLY));
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  // read(2) into one buffer rather than mmap: a file truncated while it is read gives a short
  // read, not SIGBUS.
  std::unique_ptr<std::byte[]> buffer(new std::byte[k_read_buffer]);
  Sha256 hasher;
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer.get(), k_read_buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ExitCode::error, "{}: {}", path.string(), errno_message(errno));
    }
    if (n == 0) break;
    hasher.update(std::span<const std::byte>(buffer.get(), static_cast<std::size_t>(n)));
    if (bytes_read != nullptr) *bytes_read += static_cast<std::uint64_t>(n);
  }
  return hasher.finish();
}

std::vector<CheckRequest> all_entries(const Inventory& inventory) {
  std::vector<CheckRequest> requests;
  for (std::size_t d = 0; d < inventory.distributions.size(); ++d) {
    for (std::size_t e = 0; e < inventory.distributions[d].record.size(); ++e) {
      requests.push_back(CheckRequest{d, e});
    }
  }
  return requests;
}

namespace {

constexpr std::uint32_t k_no_probe = UINT32_MAX;

// One probe per distinct path (shared paths are stat'ed and read once), each site-packages
// directory opened once for the relative stats.
struct ProbeSet {
  std::vector<Probe> probes;
  std::vector<std::uint32_t> probe_of_path;  // path id → probe, k_no_probe when not asked
  std::unordered_map<std::string, Fd> site_fds;
};

// Whether a request's file is hashed: it has a RECORD hash and the policy or the caller asks.
class HashWish {
 public:
  HashWish(const PathTable& paths, HashPolicy policy,
           const std::unordered_set<std::string>& always_hash)
      : m_policy(policy), m_always(paths.size(), false) {
    for (const std::string& path : always_hash) {
      if (auto id = paths.find(path)) m_always[*id] = true;
    }
  }
  bool operator()(const RecordEntry& entry, PathTable::Id path) const {
    return entry.sha256 && (m_policy == HashPolicy::full || m_always[path]);
  }

 private:
  HashPolicy m_policy;
  std::vector<bool> m_always;
};

void aim_probe(Probe& probe, std::string_view path, const Distribution& dist, ProbeSet& set) {
  const std::string& site = dist.site_packages.native();
  if (path.size() <= site.size() + 1 || !path.starts_with(site) || path[site.size()] != '/') {
    return;
  }
  auto [fd, inserted] = set.site_fds.try_emplace(site);
  if (inserted) fd->second = Fd(::open(site.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (fd->second.valid()) {
    probe.dir_fd = fd->second.get();
    probe.relative = static_cast<std::uint32_t>(site.size() + 1);
  }
}

ProbeSet make_probes(const Inventory& inventory, std::span<const CheckRequest> requests) {
  const PathTable& paths = inventory.paths;
  ProbeSet set;
  set.probe_of_path.assign(paths.size(), k_no_probe);
  set.probes.reserve(requests.size());
  for (const CheckRequest& request : requests) {
    const Distribution& dist = inventory.distributions.at(request.dist);
    PathTable::Id id = dist.record_path_ids.at(request.entry);
    if (set.probe_of_path[id] == k_no_probe) {
      set.probe_of_path[id] = static_cast<std::uint32_t>(set.probes.size());
      Probe& probe = set.probes.emplace_back();
      probe.path = id;
      aim_probe(probe, paths[id], dist, set);
    }
  }
  return set;
}

void mark_wanted_hashes(const Inventory& inventory, std::span<const CheckRequest> requests,
                        const HashWish& wants_hash, ProbeSet& set) {
  for (const CheckRequest& request : requests) {
    const Distribution& dist = inventory.distributions[request.dist];
    PathTable::Id id = dist.record_path_ids[request.entry];
    set.probes[set.probe_of_path[id]].want_hash |= wants_hash(dist.record[request.entry], id);
  }
}

// The digests of the probes that want one: from the cache, else read (largest first, so that
// one big library does not start last on an idle core), and remembered.
void hash_probes(const PathTable& paths, std::vector<Probe>& probes, HashCache* cache,
                 FileCheckReport& report) {
  std::vector<std::size_t> to_hash;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    Probe& probe = probes[i];
    if (!probe.want_hash || probe.state != FileState::ok) continue;
    if (cache != nullptr) {
      if (auto digest = cache->lookup(probe.identity)) {
        probe.digest = digest;
        ++report.cache_hits;
        continue;
      }
    }
    to_hash.push_back(i);
  }
  std::sort(to_hash.begin(), to_hash.end(), [&](std::size_t a, std::size_t b) {
    return probes[a].identity.size > probes[b].identity.size;
  });
  std::atomic<std::uint64_t> bytes{0};
  parallel_for(to_hash.size(), 1, [&](std::size_t k) {
    Probe& probe = probes[to_hash[k]];
    probe.hashed_at_ns = cache != nullptr ? cache->now_ns() : 0;
    std::uint64_t read = 0;
    auto digest = hash_file(fs::path(paths[probe.path]), &read);
    bytes += read;
    probe.hashed = true;
    if (digest) {
      probe.digest = *digest;
    } else {
      probe.state = FileState::unreadable;
    }
  });
  report.files_hashed = to_hash.size();
  report.bytes_hashed = bytes;
  if (cache == nullptr) return;
  for (std::size_t i : to_hash) {
    const Probe& probe = probes[i];
    if (probe.digest) cache->remember(probe.identity, *probe.digest, probe.hashed_at_ns);
  }
}

// What one request's file is, from its probe and its RECORD entry.
FileCheck judge(const Inventory& inventory, const CheckRequest& request, const Probe& probe,
                const HashWish& wants_hash) {
  const Distribution& dist = inventory.distributions[request.dist];
  const RecordEntry& entry = dist.record[request.entry];
  PathTable::Id id = dist.record_path_ids[request.entry];
  FileCheck check;
  check.dist = request.dist;
  check.entry = request.entry;
  check.record_path = entry.path;
  check.path = inventory.paths[id];
  check.path_id = id;
  check.state = probe.state;
  if (probe.state == FileState::missing) return check;
  check.actual_size = probe.identity.size;
  if (probe.digest) check.actual_sha256 = probe.digest;
  if (probe.state != FileState::ok) return check;
  if (entry.size && *entry.size != probe.identity.size) {
    check.state = FileState::size_mismatch;
  } else if (probe.digest && wants_hash(entry, id) && *probe.digest != *entry.sha256) {
    check.state = FileState::hash_mismatch;
  }
  return check;
}

}  // namespace

struct FileStats::Impl {
  std::vector<CheckRequest> requests;
  ProbeSet set;
  std::size_t known = 0;  // probes `known` answered
};

FileStats::FileStats(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
FileStats::FileStats(FileStats&&) noexcept = default;
FileStats& FileStats::operator=(FileStats&&) noexcept = default;
FileStats::~FileStats() = default;

FileStats stat_files(const Inventory& inventory, std::vector<CheckRequest> requests,
                     const KnownIdentity& known) {
  auto impl = std::make_unique<FileStats::Impl>();
  impl->requests = std::move(requests);
  impl->set = make_probes(inventory, impl->requests);
  ProbeSet& set = impl->set;
  std::atomic<std::size_t> answered = 0;
  parallel_for(set.probes.size(), 256, [&](std::size_t i) {
    Probe& probe = set.probes[i];
    if (known) {
      if (std::optional<FileIdentity> identity = known(inventory.paths[probe.path]);
          identity && S_ISREG(identity->mode)) {
        probe.identity = *identity;
        answered.fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
    stat_probe(inventory.paths, probe);
  });
  impl->known = answered.load();
  return FileStats(std::move(impl));
}

std::size_t known_count(const FileStats& stats) {
  return stats.m_impl->known;
}

FileCheckReport check_files(const Inventory& inventory, FileStats stats, HashPolicy policy,
                            const std::unordered_set<std::string>& always_hash, HashCache* cache) {
  const PathTable& paths = inventory.paths;
  const HashWish wants_hash(paths, policy, always_hash);
  const std::vector<CheckRequest>& requests = stats.m_impl->requests;
  ProbeSet& set = stats.m_impl->set;
  mark_wanted_hashes(inventory, requests, wants_hash, set);
  FileCheckReport report;
  hash_probes(paths, set.probes, cache, report);
  report.checks.reserve(requests.size());
  for (const CheckRequest& request : requests) {
    const PathTable::Id id = inventory.distributions[request.dist].record_path_ids[request.entry];
    report.checks.push_back(
        judge(inventory, request, set.probes[set.probe_of_path[id]], wants_hash));
  }
  return report;
}

FileCheckReport check_files(const Inventory& inventory, std::span<const CheckRequest> requests,
                            HashPolicy policy, const std::unordered_set<std::string>& always_hash,
                            HashCache* cache) {
  return check_files(
      inventory, stat_files(inventory, std::vector<CheckRequest>(requests.begin(), requests.end())),
      policy, always_hash, cache);
}

}  // namespace venvfix::dist
