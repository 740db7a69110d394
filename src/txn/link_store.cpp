#include "txn/link_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <optional>

#include <spdlog/spdlog.h>

#include "txn/paths.hpp"
#include "txn/snapshot_state.hpp"
#include "txn/walk_base.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {

namespace {

// The names in directory `dir`; none when it does not exist.
Result<std::vector<std::string>> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  DIR* stream = ::opendir(dir.c_str());
  if (stream == nullptr) {
    if (errno == ENOENT) return names;
    return make_error(ExitCode::error, "cannot read {}: {}", dir.string(), errno_message(errno));
  }
  std::unique_ptr<DIR, int (*)(DIR*)> closer(stream, ::closedir);
  while (dirent* entry = ::readdir(stream)) {
    std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  return names;
}

}  // namespace

fs::path store_dir(const env::Venv& venv) {
  return venv.state_dir() / "store";
}

std::string store_key(const ManifestEntry& entry) {
  return fmt::format("{:x}-{:x}-{:x}-{:x}-{:o}", entry.dev, entry.ino, entry.size,
                     static_cast<std::uint64_t>(entry.mtime_ns), entry.mode);
}

std::size_t StoreIdHash::operator()(const FileIdentity& id) const {
  // The inode number alone is almost unique on one filesystem; the rest only breaks ties.
  std::uint64_t h = id.inode * 0x9e3779b97f4a7c15ULL;
  h ^= (id.device + (id.size << 7) + (static_cast<std::uint64_t>(id.mtime_ns) << 3) + id.mode) *
       0xc2b2ae3d27d4eb4fULL;
  return static_cast<std::size_t>(h ^ (h >> 29));
}

FileIdentity store_id(const ManifestEntry& entry) {
  FileIdentity id;
  id.device = entry.dev;
  id.inode = entry.ino;
  id.size = entry.size;
  id.mtime_ns = entry.mtime_ns;
  id.mode = entry.mode;
  return id;
}

namespace {

// "dev-ino-size-mtime-mode" (hex, mode octal: store_key) back into its identity.
std::optional<FileIdentity> parse_store_name(std::string_view name) {
  std::uint64_t fields[4] = {};
  const char* at = name.data();
  const char* end = name.data() + name.size();
  for (std::uint64_t& field : fields) {
    auto [next, error] = std::from_chars(at, end, field, 16);
    if (error != std::errc() || next == end || *next != '-') return std::nullopt;
    at = next + 1;
  }
  FileIdentity id;
  auto [next, error] = std::from_chars(at, end, id.mode, 8);
  if (error != std::errc() || next != end) return std::nullopt;
  id.device = fields[0];
  id.inode = fields[1];
  id.size = fields[2];
  id.mtime_ns = static_cast<std::int64_t>(fields[3]);
  return id;
}

}  // namespace

Result<StoreIds> store_ids(const env::Venv& venv) {
  VENVFIX_TRY_ASSIGN(std::vector<std::string> names, names_in(store_dir(venv)));
  StoreIds out;
  out.reserve(names.size() * 2);
  for (const std::string& name : names) {
    if (auto id = parse_store_name(name)) out.insert(*id);
  }
  return out;
}

bool unchanged_since_walk(const Manifest& manifest, const ManifestEntry& entry,
                          const FileIdentity& now) {
  return entry.carried && manifest.walked_ns > 0 && now.ctime_ns < manifest.walked_ns;
}

StoredState stored_state(int store_fd, const std::string& key, const Manifest& manifest,
                         const ManifestEntry& entry, struct stat* out, bool* current) {
  struct stat st {};
  if (::fstatat(store_fd, key.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
    return StoredState::missing;
  }
  if (out != nullptr) *out = st;
  FileIdentity id = file_identity_from(st);
  // A mode that differs is a chmod after the snapshot, restored as a copy with the recorded mode;
  // unless the entry was carried over: then the chmod may as well have come before the snapshot.
  if (id.size == entry.size && id.mtime_ns == entry.mtime_ns &&
      (!entry.carried || (id.mode & 07777) == entry.mode)) {
    return StoredState::intact;
  }
  if (!unchanged_since_walk(manifest, entry, id)) return StoredState::changed_in_place;
  if (current != nullptr) *current = true;
  return StoredState::intact;
}

Result<std::size_t> drop_unreferenced_store_links(const env::Venv& venv) {
  fs::path store = store_dir(venv);
  VENVFIX_TRY_ASSIGN(std::vector<std::string> names, names_in(store));
  if (names.empty()) return std::size_t{0};
  std::unordered_set<std::string> referenced;
  VENVFIX_TRY_ASSIGN(std::vector<std::string> ids, names_in(snapshots_dir(venv)));
  for (const std::string& id : ids) {
    if (!is_safe_id(id) || ::access((snapshots_dir(venv) / id / "manifest").c_str(), F_OK) != 0) {
      continue;  // garbage (an interrupted create or delete): references nothing
    }
    auto manifest = load_manifest(venv, id);
    if (!manifest) {
      return make_error(ExitCode::error,
                        "kept every link in {}: snapshot {} cannot be read, and it may need them "
                        "({})",
                        store.string(), id, manifest.error().message);
    }
    if (manifest->format < 2 || manifest->kind != SnapshotKind::tree) continue;
    for (const ManifestEntry& e : manifest->entries) {
      if (e.type == 'F') referenced.insert(store_key(e));
    }
  }
  std::vector<std::string> unreferenced;
  for (const std::string& name : names) {
    if (!referenced.contains(name)) unreferenced.push_back(name);
  }
  VENVFIX_TRY(drop_store_links(venv, unreferenced));
  spdlog::debug("store {}: dropped {} of {} links", store.string(), unreferenced.size(),
                names.size());
  return unreferenced.size();
}

Status drop_store_links(const env::Venv& venv, const std::vector<std::string>& names) {
  if (names.empty()) return ok();
  // The next snapshot must then read the store (walk_base.hpp, links_held).
  VENVFIX_TRY(forget_store(venv));
  const fs::path store = store_dir(venv);
  VENVFIX_TRY_ASSIGN(Fd store_fd, open_file(store, O_RDONLY | O_DIRECTORY));
  for (const std::string& name : names) {
    if (::unlinkat(store_fd.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      return make_error(ExitCode::error, "cannot remove {}: {}", (store / name).string(),
                        errno_message(errno));
    }
  }
  return ok();
}

}  // namespace venvfix::txn
