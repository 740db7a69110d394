#include "txn/snapshot_state.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "txn/paths.hpp"
#include "txn/tree_compare.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::txn {

Result<Manifest> load_manifest(const env::Venv& venv, const std::string& id) {
  if (!is_safe_id(id)) {
    return make_error(ExitCode::usage, "{} is not a snapshot id", id);
  }
  fs::path file = snapshots_dir(venv) / id / "manifest";
  if (::access(file.c_str(), F_OK) != 0) {
    return make_error(ExitCode::usage, "no snapshot {} in {}", id, snapshots_dir(venv).string());
  }
  return read_manifest_file(file);
}

namespace {

// The manifest's header lines, through "entries\n", when they are within its first `limit` bytes.
std::optional<std::string> read_header(int fd, std::size_t limit) {
  std::string head(limit, '\0');
  ssize_t n = ::pread(fd, head.data(), head.size(), 0);
  head.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  const std::size_t end = head.find("\nentries\n");
  if (end == std::string::npos) return std::nullopt;
  head.resize(end + 9);
  return head;
}

}  // namespace

Result<Manifest> load_manifest_header(const env::Venv& venv, const std::string& id) {
  if (!is_safe_id(id)) return load_manifest(venv, id);  // its error
  const fs::path file = snapshots_dir(venv) / id / "manifest";
  auto fd = open_file(file, O_RDONLY);
  // A header is a few hundred bytes, unless its reason (a command line) is long: one page first.
  // `rollback` and `snapshot list` read the header of every snapshot kept.
  std::optional<std::string> head;
  if (fd) head = read_header(fd->get(), 4096);
  if (fd && !head) head = read_header(fd->get(), std::size_t{64} << 10);
  if (!head) return load_manifest(venv, id);  // no header that short, or unreadable: its error
  VENVFIX_TRY_ASSIGN(Manifest manifest, parse_manifest(*head, file.string()));
  if (!manifest.header_files || !manifest.header_bytes) return load_manifest(venv, id);
  return manifest;
}

Result<StateDelta> compare_with_venv(const env::Venv& venv, const Manifest& manifest,
                                     KeepIdentities keep) {
  StateDelta delta;
  if (manifest.kind == SnapshotKind::transaction) {
    for (const ManifestEntry& e : manifest.entries) {
      struct stat st {};
      bool present = ::lstat((venv.root / e.path).c_str(), &st) == 0;
      switch (e.type) {
        case 'A':
          if (present) delta.added_files.push_back(e.path);
          break;
        case 'C':
          if (present && S_ISDIR(st.st_mode)) delta.added_dirs.push_back(e.path);
          break;
        case 'D':
          if (present) break;
          delta.missing_dirs.push_back(e.path);
          delta.entries_to_restore.push_back(&e);
          break;
        default:
          delta.put_back.push_back(e.path);
          delta.entries_to_restore.push_back(&e);
          if (present) delta.changed.push_back(e.path);
      }
    }
  } else {
    VENVFIX_TRY_ASSIGN(delta, compare_tree(venv, manifest, keep));
  }
  for (auto* list : {&delta.added_files, &delta.added_dirs, &delta.put_back, &delta.changed,
                     &delta.missing_dirs}) {
    std::sort(list->begin(), list->end());
  }
  return delta;
}

}  // namespace venvfix::txn
