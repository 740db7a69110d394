#include "txn/link_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "venvfix/base/parallel.hpp"

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

std::string store_key(const FileIdentity& id) {
  return fmt::format("{:x}-{:x}-{:x}-{:x}-{:o}", id.device, id.inode, id.size,
                     static_cast<std::uint64_t>(id.mtime_ns), id.mode);
}

std::string store_key(const ManifestEntry& entry) {
  return store_key(store_id(entry));
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

StoreNameIndex::StoreNameIndex(std::size_t capacity) {
  std::size_t slots = 16;
  while (slots < capacity * 2) slots *= 2;  // at most half full: short probes
  m_slots.resize(slots);
  m_mask = slots - 1;
}

void StoreNameIndex::insert(const FileIdentity& id, std::size_t index) {
  for (std::size_t at = StoreIdHash()(id) & m_mask;; at = (at + 1) & m_mask) {
    Slot& slot = m_slots[at];
    if (slot.index_plus_one != 0 && slot.id == id) return;
    if (slot.index_plus_one == 0) {
      slot = Slot{id, index + 1};
      return;
    }
  }
}

std::optional<std::size_t> StoreNameIndex::find(const FileIdentity& id) const {
  for (std::size_t at = StoreIdHash()(id) & m_mask;; at = (at + 1) & m_mask) {
    const Slot& slot = m_slots[at];
    if (slot.index_plus_one == 0) return std::nullopt;
    if (slot.id == id) return slot.index_plus_one - 1;
  }
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

namespace {

// The manifest files of the snapshots kept: each directory under snapshots/ with a manifest. One
// without (an interrupted create or delete) references nothing.
Result<std::vector<fs::path>> kept_manifest_files(const env::Venv& venv) {
  VENVFIX_TRY_ASSIGN(std::vector<std::string> ids, names_in(snapshots_dir(venv)));
  std::vector<fs::path> files;
  for (const std::string& id : ids) {
    fs::path file = snapshots_dir(venv) / id / "manifest";
    if (is_safe_id(id) && ::access(file.c_str(), F_OK) == 0) files.push_back(std::move(file));
  }
  return files;
}

// Marks in `referenced` every name of `names` that the F entries of manifest `file` reference.
Status mark_referenced(const fs::path& file, const StoreNameIndex& names,
                       std::atomic<bool>* referenced) {
  VENVFIX_TRY_ASSIGN(MappedFile text, map_manifest_file(file));
  return visit_stored_identities(text.view(), file.string(), [&](const FileIdentity& id) {
    if (auto found = names.find(id)) referenced[*found].store(true, std::memory_order_relaxed);
  });
}

// Whether walk-base is one of `manifests` (the same inode): then a drop that keeps every link they
// reference keeps every link of the last walk.
bool walk_base_among(const env::Venv& venv, const std::vector<fs::path>& manifests) {
  auto walk_base = file_identity(walk_base_file(venv));
  if (!walk_base) return false;
  return std::any_of(manifests.begin(), manifests.end(), [&](const fs::path& manifest) {
    auto id = file_identity(manifest);
    return id && id->device == walk_base->device && id->inode == walk_base->inode;
  });
}

}  // namespace

Result<std::size_t> drop_unreferenced_store_links(const env::Venv& venv) {
  fs::path store = store_dir(venv);
  VENVFIX_TRY_ASSIGN(std::vector<std::string> names, names_in(store));
  if (names.empty()) return std::size_t{0};
  // Names looked up by the identity they spell, never formatted per entry: every kept snapshot's
  // file entries are read (30,000 each in a torch-sized venv). A name not spelt as venvfix spells
  // one is referenced by no manifest.
  StoreNameIndex index(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (auto id = parse_store_name(names[i]); id && store_key(*id) == names[i]) {
      index.insert(*id, i);
    }
  }
  VENVFIX_TRY_ASSIGN(std::vector<fs::path> manifests, kept_manifest_files(venv));
  auto referenced = std::make_unique<std::atomic<bool>[]>(names.size());
  // The manifests side by side: each is megabytes of text, read and scanned alone.
  Status read = run_parallel(manifests.size(), 2, [&](std::size_t i, const JobContext&) -> Status {
    Status marked = mark_referenced(manifests[i], index, referenced.get());
    if (marked) return ok();
    return make_error(
        ExitCode::error,
        "kept every link in {}: snapshot {} cannot be read, and it may need them ({})",
        store.string(), manifests[i].parent_path().filename().string(), marked.error().message);
  });
  VENVFIX_TRY(read);
  std::vector<std::string> unreferenced;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!referenced[i].load(std::memory_order_relaxed)) unreferenced.push_back(names[i]);
  }
  // The store held every file of the last walk, and the last walk is a snapshot kept (the guard's
  // newest): that stays true after the drop, so the record is made again for the new store
  // directory, and the next snapshot (the next guarded command's) need not read the store.
  auto store_fd = open_file(store, O_RDONLY | O_DIRECTORY);
  const bool still_held =
      store_fd && store_record_holds(venv, store_fd->get()) && walk_base_among(venv, manifests);
  VENVFIX_TRY(drop_store_links(venv, unreferenced));
  if (still_held && !unreferenced.empty()) remember_store(venv, store_fd->get());
  spdlog::debug("store {}: dropped {} of {} links, {} snapshots read", store.string(),
                unreferenced.size(), names.size(), manifests.size());
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
