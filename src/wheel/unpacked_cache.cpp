// The unpacked-wheel cache: entries written by linking what install_wheel checked, found only
// when every file still has the identity the index records.
#include "venvfix/wheel/unpacked_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "venvfix/base/sha256.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::wheel {

namespace {

constexpr std::string_view k_header = "venvfix-unpacked/1";

// The identity of a regular file (lstat: a symlink is not one); nullopt for anything else.
std::optional<FileIdentity> regular_file_identity(const fs::path& path) {
  auto id = file_identity(path);
  if (!id || !S_ISREG(id->mode)) return std::nullopt;
  return *id;
}

template <typename Number>
bool parse_number(std::string_view text, Number& out) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

void remove_quietly(const fs::path& path) {
  std::error_code ignored;
  fs::remove_all(path, ignored);
}

// "<f1> <f2> ... <f(count)> <rest>": the first `count` space-separated fields, then the rest
// (which may hold spaces); nullopt when a field or the rest is missing.
std::optional<std::vector<std::string_view>> fields_of(std::string_view line, int count) {
  std::vector<std::string_view> fields;
  for (int f = 0; f < count; ++f) {
    std::size_t space = line.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    fields.push_back(line.substr(0, space));
    line.remove_prefix(space + 1);
  }
  if (line.empty()) return std::nullopt;
  fields.push_back(line);
  return fields;
}

// Parses an index; nullopt when it is not one this version wrote. The first line holds the
// wheel blob's identity (as an UnpackedMember without a hash), the others one member each.
std::optional<std::pair<UnpackedMember, std::map<std::string, UnpackedMember, std::less<>>>>
parse_index(std::string_view text) {
  std::vector<std::string_view> lines = split(text, '\n');
  if (lines.size() < 2 || !lines.back().empty()) return std::nullopt;  // ends with a newline
  lines.pop_back();
  // "venvfix-unpacked/1 <inode> <size> <mtime ns>"
  auto header = fields_of(lines[0], 3);
  UnpackedMember wheel;
  if (!header || (*header)[0] != k_header || !parse_number((*header)[1], wheel.inode) ||
      !parse_number((*header)[2], wheel.size) || !parse_number((*header)[3], wheel.mtime_ns)) {
    return std::nullopt;
  }
  std::map<std::string, UnpackedMember, std::less<>> members;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    // "<sha256 hex> <size> <inode> <mtime ns> <name>": the name last, it may hold spaces.
    auto fields = fields_of(lines[i], 4);
    if (!fields) return std::nullopt;
    UnpackedMember member;
    auto digest = sha256_from_hex((*fields)[0]);
    if (!digest || !parse_number((*fields)[1], member.size) ||
        !parse_number((*fields)[2], member.inode) || !parse_number((*fields)[3], member.mtime_ns)) {
      return std::nullopt;
    }
    member.sha256 = *digest;
    members.emplace(std::string((*fields)[4]), member);
  }
  return std::make_pair(wheel, std::move(members));
}

}  // namespace

bool UnpackedMember::unchanged(const FileIdentity& now) const {
  return S_ISREG(now.mode) && now.inode == inode && now.size == size && now.mtime_ns == mtime_ns;
}

std::optional<UnpackedWheel> UnpackedCache::find(std::string_view wheel_sha256_hex) const {
  if (!is_sha256_hex(wheel_sha256_hex)) return std::nullopt;
  fs::path dir = m_root / wheel_sha256_hex;
  auto text = read_file(dir / "index", 64u << 20);
  if (!text) return std::nullopt;  // no entry (an entry without an index is never renamed in)
  auto parsed = parse_index(*text);
  auto damaged = [&](std::string_view why) -> std::optional<UnpackedWheel> {
    spdlog::debug("unpacked cache entry {} is damaged ({}): removed", dir.string(), why);
    remove_quietly(dir);
    return std::nullopt;
  };
  if (!parsed) return damaged("unreadable index");
  auto& [wheel, members] = *parsed;
  auto blob = file_identity(dir / "wheel.whl");
  if (!blob || !wheel.unchanged(*blob)) return damaged("wheel.whl changed");
  UnpackedWheel entry;
  entry.dir = dir;
  for (const auto& [name, member] : members) {
    auto now = file_identity(entry.member_path(name));
    if (!now || !member.unchanged(*now)) return damaged(name + " changed");
  }
  entry.members = std::move(members);
  // The entry's last use, which `venvfix cache prune` keeps by (apply/cache_maintenance.hpp):
  // the index is venvfix's own file, so its mtime is free to move.
  (void)::utimensat(AT_FDCWD, (dir / "index").c_str(), nullptr, 0);
  return entry;
}

Status UnpackedCache::add(std::string_view wheel_sha256_hex, const fs::path& wheel_file,
                          const std::vector<MemberToKeep>& members) const {
  if (!is_sha256_hex(wheel_sha256_hex)) {
    return make_error(ExitCode::error, "not a sha256: {}", wheel_sha256_hex);
  }
  fs::path final_dir = m_root / wheel_sha256_hex;
  std::error_code error;
  if (fs::exists(final_dir / "index", error)) return ok();
  fs::create_directories(temporary_dir(), error);
  if (error) return make_error(ExitCode::error, "{}: {}", m_root.string(), error.message());
  std::string pattern = (temporary_dir() / "entry.XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    return make_error(ExitCode::error, "{}: {}", pattern, errno_message(errno));
  }
  fs::path tmp(pattern);
  auto fail = [&](Error e) -> Status {
    remove_quietly(tmp);
    return e;
  };
  std::string index;
  // Following a symlink: callers reach cache blobs through links named like the wheel.
  if (::linkat(AT_FDCWD, wheel_file.c_str(), AT_FDCWD, (tmp / "wheel.whl").c_str(),
               AT_SYMLINK_FOLLOW) != 0) {
    return fail(make_error(ExitCode::error, "cannot link {} into {}: {}", wheel_file.string(),
                           tmp.string(), errno_message(errno)));
  }
  auto blob = regular_file_identity(tmp / "wheel.whl");
  if (!blob) return fail(make_error(ExitCode::error, "{}: not a file", wheel_file.string()));
  index += fmt::format("{} {} {} {}\n", k_header, blob->inode, blob->size, blob->mtime_ns);
  std::vector<fs::path> kept = {tmp / "wheel.whl"};
  for (const MemberToKeep& member : members) {
    if (member.name.find('\n') != std::string::npos) {
      return fail(make_error(ExitCode::error,
                             "{}: member {:?} has a newline in its name; not cached",
                             wheel_file.string(), member.name));
    }
    fs::path to = tmp / "m" / member.name;
    fs::create_directories(to.parent_path(), error);
    if (error) return fail(make_error(ExitCode::error, "{}: {}", to.string(), error.message()));
    if (member.copy) {
      fs::copy_file(member.written, to, error);
      if (error) {
        return fail(make_error(ExitCode::error, "cannot copy {} to {}: {}", member.written.string(),
                               to.string(), error.message()));
      }
    } else if (::link(member.written.c_str(), to.c_str()) != 0) {
      return fail(make_error(ExitCode::error, "cannot link {} to {}: {}", member.written.string(),
                             to.string(), errno_message(errno)));
    }
    auto id = regular_file_identity(to);
    if (!id || id->size != member.size) {
      return fail(
          make_error(ExitCode::error, "{} is not the member's {} bytes", to.string(), member.size));
    }
    index += fmt::format("{} {} {} {} {}\n", to_hex(member.sha256), member.size, id->inode,
                         id->mtime_ns, member.name);
    kept.push_back(std::move(to));
  }
  // The index is what makes an entry, and a later install trusts a member by inode, size and
  // mtime without reading its bytes again: so the files' data must be on the disk before the
  // index is. A filesystem may persist a file's size before its data (ext4 with
  // data=writeback); a power cut would then leave an entry that passes every check with other
  // bytes in it.
  if (Status durable = make_files_durable(tmp, kept, *m_steps); !durable) {
    return fail(durable.error());
  }
  if (Status written = write_file_atomic(tmp / "index", index, 0644, *m_steps); !written) {
    return fail(written.error());
  }
  if (::rename(tmp.c_str(), final_dir.c_str()) != 0) {
    int saved = errno;
    remove_quietly(tmp);
    // Another process kept the same wheel first: its entry is as good.
    if (saved == EEXIST || saved == ENOTEMPTY) return ok();
    return make_error(ExitCode::error, "cannot rename {} to {}: {}", tmp.string(),
                      final_dir.string(), errno_message(saved));
  }
  return ok();
}

}  // namespace venvfix::wheel
