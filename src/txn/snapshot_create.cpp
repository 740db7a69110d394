// Whole-venv snapshots, format 3: one pass over the venv records every path's identity in the
// manifest, and each regular file whose identity the link store (link_store.hpp) does not hold yet
// gets one hard link there. Directories and symlinks cost only their manifest line. A directory
// whose identity has not changed since the last walk (walk_base.hpp) is not listed: its entries are
// carried over from that walk, so a later snapshot costs a stat per directory, not per file. The
// first snapshot of a venv costs about a `cp -al` without its mkdirs. Everything goes through
// directory descriptors (*at() calls), so each entry costs one lookup in its own directory.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include <spdlog/spdlog.h>

#include "txn/link_store.hpp"
#include "txn/manifest.hpp"
#include "txn/paths.hpp"
#include "txn/walk_base.hpp"
#include "venvfix/base/dir_entries.hpp"
#include "venvfix/txn/journal.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {

namespace {

struct Walker {
  fs::path root;  // for messages
  int store_fd = -1;
  StoreIds held;                   // what the store holds, or (base_links_held) what it gained
  const WalkBase* base = nullptr;  // the last walk, when there is one
  // The store still holds every file of the last walk (WalkBase::links_held): it was not read.
  bool base_links_held = false;
  std::size_t linked = 0;                     // links added to the store
  std::vector<std::string>* added = nullptr;  // when not null: their names
  std::size_t listed = 0;                     // directories read (the root included)
  std::size_t carried = 0;                    // directories carried over from the last walk
  Manifest header;                            // the manifest's, without entries
  std::string lines;                          // its entry lines, in walk order
  SnapshotInfo counted;                       // files and symlinks in them, and their bytes

  Error error_at(const std::string& rel, std::string_view what, int error_number) const {
    return make_error(ExitCode::error, "cannot snapshot {}: {}: {}", (root / rel).string(), what,
                      errno_message(error_number));
  }

  void add_line(const ManifestEntry& entry) {
    append_entry_line(lines, entry, header);
    count(entry.type, entry.size);
  }
  void count(char type, std::uint64_t size) {
    if (type != 'F' && type != 'S') return;
    ++counted.files;
    counted.bytes += size;
  }

  Status add_file(int src_dir, const char* name, const struct stat& st, const std::string& rel) {
    ManifestEntry entry = entry_from_stat('F', st, rel);
    // Where the store was not read, a file it already holds fails with EEXIST.
    if (held.insert(store_id(entry)).second) {
      std::string key = store_key(entry);
      if (::linkat(src_dir, name, store_fd, key.c_str(), 0) == 0) {
        ++linked;
        if (added != nullptr) added->push_back(std::move(key));
      } else if (errno != EEXIST) {
        return error_at(rel, "link it into the store", errno);
      }
    }
    add_line(entry);
    return ok();
  }

  Status add_symlink(int src_dir, const char* name, const struct stat& st, const std::string& rel) {
    std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
    ssize_t n = ::readlinkat(src_dir, name, target.data(), target.size());
    if (n < 0) return error_at(rel, "readlink", errno);
    target.resize(static_cast<std::size_t>(n));
    ManifestEntry entry = entry_from_stat('S', st, rel);
    entry.size = target.size();
    entry.target = std::move(target);
    add_line(entry);
    return ok();
  }

  // Any entry of a listed directory, by what fstatat says it is.
  Status add_entry(int src_dir, const char* name, const std::string& rel) {
    struct stat st {};
    if (::fstatat(src_dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return error_at(rel, "stat", errno);
    }
    if (S_ISREG(st.st_mode)) return add_file(src_dir, name, st, rel);
    if (S_ISLNK(st.st_mode)) return add_symlink(src_dir, name, st, rel);
    if (S_ISDIR(st.st_mode)) return enter(src_dir, name, rel);
    spdlog::warn("not in the snapshot: {} (not a file, symlink or directory)",
                 (root / rel).string());
    return ok();
  }

  // A directory: its entry, with the identity of the opened directory taken before it is read (a
  // change after that changes its ctime, so the next walk reads it again), then its contents.
  Status enter(int parent, const char* name, const std::string& rel) {
    int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return error_at(rel, "open directory", errno);
    Fd owned(fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0) return error_at(rel, "stat", errno);
    ManifestEntry entry = entry_from_stat('D', st, rel);
    entry.size = 0;
    entry.carried = base != nullptr && base->unchanged(rel, st);
    add_line(entry);
    return entry.carried ? carry(fd, rel) : list(fd, rel);
  }

  Status list(int dir, const std::string& rel_dir) {
    ++listed;
    Status status = ok();
    int error = for_each_dir_entry(dir, [&](const DirEntry& entry) {
      std::string rel = join(rel_dir, entry.name);
      if (rel == ".venvfix") return true;
      // A directory needs no fstatat: enter() takes its identity from the opened descriptor.
      status = entry.type == DT_DIR ? enter(dir, entry.name, rel) : add_entry(dir, entry.name, rel);
      return status.has_value();
    });
    if (error != 0) return error_at(rel_dir, "read directory", error);
    return status;
  }

  // The entries the last walk recorded in an unchanged directory: the lines of its files and
  // symlinks copied as they are, each subdirectory entered (it may have changed). A file the store
  // no longer holds (its link dropped since) is stat'ed and linked like a new one: the directory
  // keeps its inode alive meanwhile.
  Status carry(int dir, const std::string& rel_dir) {
    ++carried;
    const std::size_t skip = rel_dir.empty() ? 0 : rel_dir.size() + 1;
    for (std::uint32_t index : base->children(rel_dir)) {
      const WalkLine& line = base->line(index);
      if (line.type == 'D') {
        const std::string& path = base->directory(line).path;
        VENVFIX_TRY(enter(dir, path.c_str() + skip, path));
        continue;
      }
      if (line.type == 'F' && !base_links_held) {
        VENVFIX_TRY_ASSIGN(ManifestEntry was, base->entry(line));
        if (!held.contains(store_id(was))) {
          VENVFIX_TRY(add_entry(dir, was.path.c_str() + skip, was.path));
          continue;
        }
      }
      lines += base->text(line);
      count(line.type, line.size);
    }
    return ok();
  }
};

Status make_dir(const fs::path& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) {
    return make_error(ExitCode::error, "cannot create {}: {}", dir.string(), error.message());
  }
  return ok();
}

// Walks the venv into the store and writes the manifest into `dir`. The links are made durable
// (one syncfs) before the manifest, which goes last: a snapshot directory without a manifest is
// an interrupted creation (garbage), and store links no manifest references are dropped by the
// next `prune` or `delete`.
Status fill_snapshot(const env::Venv& venv, Walker& walker, const fs::path& dir) {
  VENVFIX_TRY_ASSIGN(Fd src, open_file(venv.root, O_RDONLY | O_DIRECTORY));
  VENVFIX_TRY_ASSIGN(Fd store, open_file(store_dir(venv), O_RDONLY | O_DIRECTORY));
  walker.store_fd = store.get();
  const std::unique_ptr<WalkBase> base = WalkBase::load(venv, store.get());
  walker.base = base.get();
  walker.base_links_held = base != nullptr && base->links_held();
  if (!walker.base_links_held) {
    auto held = store_ids(venv);
    if (!held) return std::move(held).error();
    walker.held.swap(*held);
  }
  // About the last walk's size again: most venvs change little between snapshots.
  if (base) reserve_text(walker.lines, base->text_size() + base->text_size() / 8 + 4096);
  VENVFIX_TRY(walker.list(src.get(), ""));
  // Nothing linked: nothing to make durable, and a syncfs would wait for whatever else the machine
  // has written to this disk. The links it reuses were made durable by the snapshot that made them
  // (or, if that one was killed before its syncfs, are on their way to the disk: a power cut that
  // loses one makes a restore refuse, naming the file, never restore a mix).
  if (walker.linked != 0 && ::syncfs(src.get()) != 0) {
    return make_error(ExitCode::error, "{}: syncfs: {}", venv.root.string(), errno_message(errno));
  }
  walker.lines.insert(0, manifest_header_text(walker.header, walker.counted));
  VENVFIX_TRY(write_file_atomic(dir / "manifest", walker.lines));
  if (remember_walk(venv, dir / "manifest")) remember_store(venv, store.get());
  return ok();
}

}  // namespace

fs::path snapshots_dir(const env::Venv& venv) {
  return venv.state_dir() / "snapshots";
}

namespace {

// The walk, its store links and its manifest; when `kept` is not null, the manifest also into it
// (with the entries of carried directories marked as a reader of its text would mark them), and
// the names of the links added.
Result<SnapshotInfo> snapshot_venv(const env::Venv& venv, const VenvLock& lock, std::string reason,
                                   TakenSnapshot* kept) {
  if (lock.venv_root() != venv.root) {
    return make_error(ExitCode::error, "internal error: the lock held is for {}, not {}",
                      lock.venv_root().string(), venv.root.string());
  }
  VENVFIX_TRY(require_no_unfinished_transaction(venv));
  auto start = std::chrono::steady_clock::now();
  VENVFIX_TRY(make_dir(store_dir(venv)));
  Walker walker;
  walker.root = venv.root;
  if (kept != nullptr) walker.added = &kept->added_links;
  // The clock first: whatever changes from here on is newer than the walk (walk_base.hpp).
  VENVFIX_TRY_ASSIGN(walker.header.walked_ns, filesystem_now(venv));
  walker.header.id = new_id();
  walker.header.kind = SnapshotKind::tree;
  walker.header.created = utc_now_iso8601();
  walker.header.method = "hardlink";
  walker.header.reason = std::move(reason);
  fs::path dir = snapshots_dir(venv) / walker.header.id;
  VENVFIX_TRY(make_dir(dir));
  if (auto status = fill_snapshot(venv, walker, dir); !status) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
    return std::move(status).error();
  }
  walker.header.header_files = walker.counted.files;
  walker.header.header_bytes = walker.counted.bytes;
  SnapshotInfo info = walker.header.info();
  info.linked = walker.linked;
  info.dirs_listed = walker.listed;
  info.dirs_carried = walker.carried;
  info.store_read = !walker.base_links_held;
  spdlog::debug(
      "snapshot {}: {} files, {} bytes, {} new store links, {} directories read, {} carried over "
      "from the last walk, the store {}, in {:.1f} ms",
      info.id, info.files, info.bytes, info.linked, info.dirs_listed, info.dirs_carried,
      info.store_read ? "read" : "not read (it holds every file of the last walk)",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  if (kept != nullptr) {
    // What a reader of the manifest gets (its carried marks included): read back from the text
    // still in memory, which `run` compares the venv with after its command.
    auto manifest = parse_manifest(walker.lines, (dir / "manifest").string());
    if (!manifest) {  // never written so: no snapshot rather than one no restore could read
      std::error_code ignored;
      fs::remove_all(dir, ignored);
      (void)::unlink(walk_base_file(venv).c_str());
      return std::move(manifest).error();
    }
    kept->manifest = std::make_shared<const Manifest>(std::move(manifest).value());
  }
  return info;
}

}  // namespace

Result<TakenSnapshot> take_snapshot(const env::Venv& venv, const VenvLock& lock,
                                    std::string reason) {
  TakenSnapshot taken;
  VENVFIX_TRY_ASSIGN(taken.info, snapshot_venv(venv, lock, std::move(reason), &taken));
  return taken;
}

Result<SnapshotInfo> create_snapshot(const env::Venv& venv, const VenvLock& lock,
                                     std::string reason) {
  return snapshot_venv(venv, lock, std::move(reason), nullptr);
}

}  // namespace venvfix::txn
