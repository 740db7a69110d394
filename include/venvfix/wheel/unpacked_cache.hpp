// Unpacked wheels kept for the next install of the same wheel, so that re-applying a plan
// costs a copy of each file (a reflink clone where the filesystem has them) instead of
// inflating, hashing and writing every byte again. uv keeps a cache of the same kind.
//
//   <root>/<wheel sha256 hex>/wheel.whl       a hard link to the download cache's blob
//   <root>/<wheel sha256 hex>/m/<member>      each installed member, as the archive holds it
//   <root>/<wheel sha256 hex>/index           written last: what each file must be
//   <root>/tmp/                               entries being written
//
// An entry is written by hard-linking the files install_wheel has just written and checked
// (scripts, which are rewritten in place afterwards, are copied), making their data durable,
// writing the index, then renaming its directory into place: an entry that exists is complete, also
// after a power cut. The index records each file's size, sha256 (as checked against the wheel's
// RECORD when it was unpacked), inode and mtime; an entry whose file no longer has its recorded
// identity (a write through the venv's hard link, say) is removed and the wheel is unpacked again.
// Installs copy out of the cache, never link: the venv's files never share an inode with a later
// install.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/base/sha256.hpp"

namespace venvfix::wheel {

namespace fs = std::filesystem;

struct UnpackedMember {
  std::uint64_t size = 0;
  Sha256Digest sha256{};
  std::uint64_t inode = 0;
  std::int64_t mtime_ns = 0;

  // True when `now` (the cached file's identity) is still what the index recorded: a regular
  // file with the same inode, size and mtime.
  bool unchanged(const FileIdentity& now) const;
};

// A complete entry whose files all had their recorded identity when it was found.
struct UnpackedWheel {
  fs::path dir;
  std::map<std::string, UnpackedMember, std::less<>> members;  // by archive name

  fs::path wheel_file() const { return dir / "wheel.whl"; }
  fs::path member_path(std::string_view name) const { return dir / "m" / name; }
};

// One file install_wheel wrote that the cache keeps.
struct MemberToKeep {
  std::string name;   // the archive member's name
  fs::path written;   // the file written (in staging), with the member's bytes
  bool copy = false;  // copy instead of hard-linking (a file rewritten in place later)
  std::uint64_t size = 0;
  Sha256Digest sha256{};
};

class UnpackedCache {
 public:
  // Every write of add() that must reach the disk in order goes through `steps`.
  explicit UnpackedCache(fs::path root, WriteSteps& steps = system_write_steps())
      : m_root(std::move(root)), m_steps(&steps) {}
  const fs::path& root() const { return m_root; }
  // Where entries are written until complete (then renamed into the root).
  fs::path temporary_dir() const { return m_root / "tmp"; }

  // The entry of the wheel with this sha256, when complete and intact (its index's mtime then
  // records this use); a damaged entry is removed (and nullopt returned).
  std::optional<UnpackedWheel> find(std::string_view wheel_sha256_hex) const;

  // Keeps `members` as the entry of the wheel `wheel_file` (which has sha256
  // `wheel_sha256_hex`). Does nothing when the entry exists. A failure leaves no entry.
  Status add(std::string_view wheel_sha256_hex, const fs::path& wheel_file,
             const std::vector<MemberToKeep>& members) const;

 private:
  fs::path m_root;
  WriteSteps* m_steps;
};

}  // namespace venvfix::wheel
