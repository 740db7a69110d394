// The unpacked-wheel cache: entries written by linking what install_wheel checked, found only
// when every file still has the identity the index records.
#include "venvfix/wheel/unpacked_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <sstream>

#include <spdlog/spdlog.h>

#include "venvfix/base/strings.hpp"

namespace venvfix::wheel {

namespace {

constexpr std::string_view k_header = "venvfix-unpacked/1";

bool is_sha256_hex(std::string_view text) {
  return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

struct Identity {
  std::uint64_t inode = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
};

std::optional<Identity> identity_of(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  FileIdentity id = file_identity_from(st);
  return Identity{id.inode, id.size, id.mtime_ns};
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

// Parses an index; nullopt when it is not one this version wrote.
std::optional<std::pair<Identity, std::map<std::string, UnpackedMember, std::less<>>>> parse_index(
    std::string_view text) {
  std::vector<std::string_view> lines = split(text, '\n');
  if (lines.empty() || !lines.back().empty()) return std::nullopt;  // ends with a newline
  lines.pop_back();
  if (lines.empty()) return std::nullopt;
  Identity wheel;
  std::map<std::string, UnpackedMember, std::less<>> members;
  {
    std::istringstream header{std::string(lines[0])};
    std::string tag;
    if (!(header >> tag >> wheel.inode >> wheel.size >> wheel.mtime_ns) || tag != k_header) {
      return std::nullopt;
    }
  }
  for (std::size_t i = 1; i < lines.size(); ++i) {
    // "<sha256 hex> <size> <inode> <mtime ns> <name>": the name last, it may hold spaces.
    std::string_view line = lines[i];
    std::vector<std::string_view> fields;
    for (int f = 0; f < 4; ++f) {
      std::size_t space = line.find(' ');
      if (space == std::string_view::npos) return std::nullopt;
      fields.push_back(line.substr(0, space));
      line.remove_prefix(space + 1);
    }
    if (line.empty()) return std::nullopt;
    UnpackedMember member;
    auto digest = sha256_from_hex(fields[0]);
    if (!digest || !parse_number(fields[1], member.size) ||
        !parse_number(fields[2], member.inode) || !parse_number(fields[3], member.mtime_ns)) {
      return std::nullopt;
    }
    member.sha256 = *digest;
    members.emplace(std::string(line), member);
  }
  return std::make_pair(wheel, std::move(members));
}

}  // namespace

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
  auto blob = identity_of(dir / "wheel.whl");
  if (!blob || blob->inode != wheel.inode || blob->size != wheel.size ||
      blob->mtime_ns != wheel.mtime_ns) {
    return damaged("wheel.whl changed");
  }
  UnpackedWheel entry;
  entry.dir = dir;
  for (const auto& [name, member] : members) {
    auto now = identity_of(entry.member_path(name));
    if (!now || now->inode != member.inode || now->size != member.size ||
        now->mtime_ns != member.mtime_ns) {
      return damaged(name + " changed");
    }
  }
  entry.members = std::move(members);
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
  fs::create_directories(m_root / "tmp", error);
  if (error) return make_error(ExitCode::error, "{}: {}", m_root.string(), error.message());
  std::string pattern = (m_root / "tmp" / "entry.XXXXXX").string();
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
  auto blob = identity_of(tmp / "wheel.whl");
  if (!blob) return fail(make_error(ExitCode::error, "{}: not a file", wheel_file.string()));
  index += fmt::format("{} {} {} {}\n", k_header, blob->inode, blob->size, blob->mtime_ns);
  for (const MemberToKeep& member : members) {
    if (member.name.find('\n') != std::string::npos) {
      return fail(make_error(ExitCode::error, "member name with a newline: not cached"));
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
    auto id = identity_of(to);
    if (!id || id->size != member.size) {
      return fail(
          make_error(ExitCode::error, "{} is not the member's {} bytes", to.string(), member.size));
    }
    index += fmt::format("{} {} {} {} {}\n", to_hex(member.sha256), member.size, id->inode,
                         id->mtime_ns, member.name);
  }
  if (Status written = write_file_atomic(tmp / "index", index); !written) {
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
