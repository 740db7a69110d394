// The hash cache file: versioned little-endian records with a trailing checksum (CRC-32 from
// version 2; version 1's SHA-256 is still read).
#include "venvfix/dist/hash_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <libdeflate.h>

#include "venvfix/base/log.hpp"

namespace venvfix::dist {

namespace {

constexpr char k_magic[8] = {'V', 'F', 'X', 'H', 'A', 'S', 'H', '\n'};
// Version 2 ends with a CRC-32, version 1 with a SHA-256. The checksum only catches a torn or
// damaged file (it is written atomically and trusted as much as the venv), and a CRC-32 needs no
// libcrypto: a warm doctor, which hashes nothing, does not load it at all.
constexpr std::uint32_t k_version = 2;
constexpr std::uint32_t k_version_sha256 = 1;
constexpr std::size_t k_header_size = 8 + 4 + 4 + 8;
constexpr std::size_t k_record_size = 5 * 8 + 32;
constexpr std::size_t k_max_entries = 1u << 20;
// Entries above this are pruned (the unused ones first) so the file cannot grow forever.
constexpr std::size_t k_keep_entries = 1u << 18;

void put_u64(std::string& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
void put_u32(std::string& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
std::uint64_t get_u64(const char* p) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<std::uint8_t>(p[i]);
  return value;
}
std::uint32_t get_u32(const char* p) {
  std::uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | static_cast<std::uint8_t>(p[i]);
  return value;
}

std::uint32_t crc32_of(std::string_view bytes) {
  return libdeflate_crc32(0, bytes.data(), bytes.size());
}

std::size_t checksum_size(std::uint32_t version) {
  return version == k_version_sha256 ? 32 : 4;
}

// Whether `body` ends in the checksum `version` puts after it.
bool checksum_matches(std::uint32_t version, std::string_view body, std::string_view checksum) {
  if (version == k_version_sha256) {
    Sha256Digest digest = sha256(body);
    return std::memcmp(digest.data(), checksum.data(), digest.size()) == 0;
  }
  return get_u32(checksum.data()) == crc32_of(body);
}

bool not_writable(int error_number) {
  return error_number == EACCES || error_number == EROFS || error_number == EPERM;
}

}  // namespace

std::size_t HashCache::KeyHash::operator()(const Key& key) const {
  std::uint64_t h = key.inode * 0x9E3779B97F4A7C15ull;
  h ^= key.device + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
  h ^= static_cast<std::uint64_t>(key.mtime_ns) + (h << 6) + (h >> 2);
  h ^= key.size + (h << 6) + (h >> 2);
  return static_cast<std::size_t>(h);
}

HashCache::Key HashCache::key_of(const FileIdentity& identity) {
  return Key{identity.device, identity.inode, identity.size, identity.mtime_ns, identity.ctime_ns};
}

HashCache HashCache::load(const fs::path& file) {
  HashCache cache(file);
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return cache;  // no cache yet
  auto bytes = read_file(file, k_header_size + k_max_entries * k_record_size + 32);
  if (!bytes) {
    spdlog::debug("ignoring the hash cache: {}", bytes.error().message);
    cache.m_corrupt = true;
    return cache;
  }
  if (auto status = cache.decode(*bytes); !status) {
    spdlog::debug("ignoring the hash cache {}: {}", file.string(), status.error().message);
    cache.m_entries.clear();
    cache.m_corrupt = true;
  }
  return cache;
}

std::optional<Sha256Digest> HashCache::lookup(const FileIdentity& identity) {
  auto it = m_entries.find(key_of(identity));
  if (it == m_entries.end()) return std::nullopt;
  it->second.used = true;
  return it->second.digest;
}

bool HashCache::remember(const FileIdentity& identity, const Sha256Digest& digest,
                         std::int64_t hashed_at_ns) {
  if (!changed_well_before(identity, hashed_at_ns)) return false;
  auto [it, inserted] = m_entries.try_emplace(key_of(identity), Entry{digest, true});
  if (!inserted && it->second.digest != digest) {
    it->second.digest = digest;  // same identity, other bytes: only a racy write can do this
    inserted = true;
  }
  it->second.used = true;
  if (inserted) m_dirty = true;
  return true;
}

bool HashCache::seed(const FileIdentity& identity, const Sha256Digest& digest) {
  if (!S_ISREG(identity.mode)) return false;
  auto [it, inserted] = m_entries.try_emplace(key_of(identity), Entry{digest, true});
  if (!inserted && it->second.digest != digest) {
    it->second.digest = digest;
    inserted = true;
  }
  it->second.used = true;
  if (inserted) m_dirty = true;
  return true;
}

std::string HashCache::encode() const {
  std::vector<std::pair<Key, const Entry*>> sorted;
  sorted.reserve(m_entries.size());
  for (const auto& [key, entry] : m_entries) sorted.emplace_back(key, &entry);
  if (sorted.size() > k_keep_entries) {
    // Keep what this run used; drop the rest, oldest identities being the likeliest stale.
    std::stable_partition(sorted.begin(), sorted.end(),
                          [](const auto& item) { return item.second->used; });
    sorted.resize(k_keep_entries);
  }
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.device, a.first.inode, a.first.mtime_ns) <
           std::tie(b.first.device, b.first.inode, b.first.mtime_ns);
  });
  std::string out;
  out.reserve(k_header_size + sorted.size() * k_record_size + 4);
  out.append(k_magic, sizeof k_magic);
  put_u32(out, k_version);
  put_u32(out, static_cast<std::uint32_t>(k_record_size));
  put_u64(out, sorted.size());
  for (const auto& [key, entry] : sorted) {
    put_u64(out, key.device);
    put_u64(out, key.inode);
    put_u64(out, key.size);
    put_u64(out, static_cast<std::uint64_t>(key.mtime_ns));
    put_u64(out, static_cast<std::uint64_t>(key.ctime_ns));
    out.append(reinterpret_cast<const char*>(entry->digest.data()), entry->digest.size());
  }
  put_u32(out, crc32_of(out));
  return out;
}

Status HashCache::decode(std::string_view bytes) {
  if (bytes.size() < k_header_size + 4 || std::memcmp(bytes.data(), k_magic, 8) != 0) {
    return make_error(ExitCode::error, "not a venvfix hash cache");
  }
  std::uint32_t version = get_u32(bytes.data() + 8);
  std::uint32_t record_size = get_u32(bytes.data() + 12);
  std::uint64_t count = get_u64(bytes.data() + 16);
  if ((version != k_version && version != k_version_sha256) || record_size != k_record_size) {
    return make_error(ExitCode::error, "unknown hash cache version {}", version);
  }
  const std::size_t trailer = checksum_size(version);
  if (count > k_max_entries || bytes.size() != k_header_size + count * k_record_size + trailer) {
    return make_error(ExitCode::error, "truncated or oversized hash cache");
  }
  std::string_view body = bytes.substr(0, bytes.size() - trailer);
  if (!checksum_matches(version, body, bytes.substr(body.size()))) {
    return make_error(ExitCode::error, "hash cache checksum mismatch");
  }
  // A version-1 file is written again as version 2 by the next save, whatever else it learns.
  m_dirty = version != k_version;
  m_entries.clear();
  m_entries.reserve(count);
  const char* p = bytes.data() + k_header_size;
  for (std::uint64_t i = 0; i < count; ++i, p += k_record_size) {
    Key key{get_u64(p), get_u64(p + 8), get_u64(p + 16), static_cast<std::int64_t>(get_u64(p + 24)),
            static_cast<std::int64_t>(get_u64(p + 32))};
    Entry entry;
    std::memcpy(entry.digest.data(), p + 40, 32);
    m_entries.emplace(key, entry);
  }
  return ok();
}

Status HashCache::save() {
  if (!m_dirty) return ok();
  const fs::path dir = m_file.parent_path();
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    if (not_writable(errno) || errno == ENOENT) {
      spdlog::debug("not saving the hash cache: cannot create {}: {}", dir.string(),
                    errno_message(errno));
      return ok();
    }
    return make_error(ExitCode::error, "cannot create {}: {}", dir.string(), errno_message(errno));
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    spdlog::debug("not saving the hash cache: {} is not writable: {}", dir.string(),
                  errno_message(errno));
    return ok();
  }
  if (auto status = write_file_atomic(m_file, encode()); !status) {
    if (not_writable(errno)) {
      spdlog::debug("not saving the hash cache: {}", status.error().message);
      return ok();
    }
    return status;
  }
  m_dirty = false;
  m_corrupt = false;
  return ok();
}

}  // namespace venvfix::dist
