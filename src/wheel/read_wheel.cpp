// Phase one of an install: everything about a wheel that can be checked without inflating its
// members. See docs/wheel.md, "Refusal rules".
#include <sys/stat.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "venvfix/base/strings.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/wheel/wheel.hpp"
#include "wheel/entry_points.hpp"
#include "wheel/member_name.hpp"
#include "wheel/zip_reader.hpp"

namespace venvfix::wheel {

namespace {

using detail::EntryType;
using detail::ZipEntry;
using detail::ZipReader;

bool is_record_signature(std::string_view file) {
  return file == "RECORD" || file == "RECORD.jws" || file == "RECORD.p7s";
}

// The first value of a header in an RFC 822 block, as email.message.Message[key] returns it.
std::optional<std::string> header_value(std::string_view text, std::string_view key) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    std::size_t colon = line.find(':');
    if (colon != std::string_view::npos &&
        to_lower_ascii(trim(line.substr(0, colon))) == to_lower_ascii(key)) {
      return std::string(trim(line.substr(colon + 1)));
    }
    start = end + 1;
  }
  return std::nullopt;
}

struct Reading {
  std::string display;
  WheelContents contents;
  std::unordered_map<std::string, std::size_t> member_index;    // name -> members[i]
  std::unordered_set<std::string> directories;                  // explicit directory entries
  std::unordered_map<std::string, std::string> metadata_files;  // member name -> bytes
};

Error refuse(const Reading& r, std::string_view member, std::string_view why) {
  return make_error(ExitCode::usage, "{}: member {} {}; the wheel is refused", r.display,
                    printable_excerpt(member, 200), why);
}

// The dist-info files read whole in phase one (small; their hashes are checked here).
bool is_metadata_file(std::string_view name) {
  std::size_t slash = name.find('/');
  if (slash == std::string_view::npos) return false;
  std::string_view dir = name.substr(0, slash);
  std::string_view file = name.substr(slash + 1);
  if (dir.size() <= 10 || dir.substr(dir.size() - 10) != ".dist-info") return false;
  return file == "WHEEL" || file == "METADATA" || file == "RECORD" || file == "entry_points.txt";
}

std::uint64_t size_limit(const ReadLimits& limits, std::uint64_t archive_size) {
  std::uint64_t by_ratio = archive_size > UINT64_MAX / std::max<std::uint64_t>(limits.max_ratio, 1)
                               ? UINT64_MAX
                               : archive_size * limits.max_ratio;
  return std::min(limits.max_total_bytes, std::max(limits.ratio_floor_bytes, by_ratio));
}

Status scan_entries(Reading& r, ZipReader& zip, const ReadLimits& limits) {
  const std::uint64_t limit = size_limit(limits, r.contents.archive_size);
  for (;;) {
    VENVFIX_TRY_ASSIGN(std::optional<ZipEntry> next, zip.next());
    if (!next) return ok();
    ZipEntry& entry = *next;
    if (!entry.name_ok) {
      // The UTF-8 flag is set and the bytes are no UTF-8: zipfile's decode fails there too.
      std::string which =
          entry.name.empty()
              ? fmt::format("number {}", r.contents.members.size() + r.directories.size() + 1)
              : entry.name;
      return refuse(r, which, "has a name that is not valid UTF-8");
    }
    if (r.contents.members.size() + r.directories.size() >= limits.max_members) {
      return make_error(ExitCode::usage, "{}: more than {} members; the wheel is refused",
                        r.display, limits.max_members);
    }
    if (entry.encrypted) return refuse(r, entry.name, "is encrypted");
    switch (entry.type) {
      case EntryType::symlink:
        return refuse(r, entry.name, "is a symbolic link");
      case EntryType::hardlink:
        return refuse(r, entry.name, "is a hard link");
      case EntryType::other:
        return refuse(r, entry.name, "is a device, fifo or socket");
      case EntryType::directory:
      case EntryType::file:
        break;
    }
    bool is_dir = entry.type == EntryType::directory || entry.name.ends_with('/');
    std::string name = entry.name;
    if (is_dir && name.ends_with('/')) name.pop_back();
    if (auto why = detail::unsafe_name_reason(name)) return refuse(r, entry.name, *why);
    if (is_dir) {
      if (r.member_index.count(name) != 0) return refuse(r, entry.name, "is also a file");
      r.directories.insert(std::move(name));
      continue;
    }
    if (r.member_index.count(name) != 0 || r.directories.count(name) != 0) {
      return refuse(r, entry.name, "appears twice");
    }
    if (!entry.size) return refuse(r, entry.name, "has no size in its header");
    if (*entry.size > limit - std::min(limit, r.contents.total_size)) {
      return make_error(ExitCode::usage,
                        "{}: members add up to more than {} bytes uncompressed from a {}-byte "
                        "archive (at member {}); a zip bomb is refused",
                        r.display, limit, r.contents.archive_size, printable_excerpt(name, 200));
    }
    r.contents.total_size += *entry.size;
    if (is_metadata_file(name)) {
      if (*entry.size > limits.max_metadata_bytes) {
        return refuse(r, name, fmt::format("is larger than {} bytes", limits.max_metadata_bytes));
      }
      std::string data;
      data.reserve(static_cast<std::size_t>(*entry.size));
      VENVFIX_TRY_ASSIGN(std::uint64_t got,
                         zip.read_data(name, *entry.size, [&data](std::span<const std::byte> b) {
                           data.append(reinterpret_cast<const char*>(b.data()), b.size());
                           return ok();
                         }));
      if (got != *entry.size) {
        return refuse(r, name,
                      fmt::format("holds {} bytes but its header says {}", got, *entry.size));
      }
      r.metadata_files.emplace(name, std::move(data));
    }
    WheelMember member;
    member.name = name;
    member.size = *entry.size;
    member.executable = (entry.permissions & 0111u) != 0;
    r.member_index.emplace(std::move(name), r.contents.members.size());
    r.contents.members.push_back(std::move(member));
  }
}

// No member may sit below another member's file name ("a" and "a/b").
Status check_prefixes(const Reading& r) {
  for (const WheelMember& member : r.contents.members) {
    for (std::size_t slash = member.name.find('/'); slash != std::string::npos;
         slash = member.name.find('/', slash + 1)) {
      if (r.member_index.count(member.name.substr(0, slash)) != 0) {
        return refuse(r, member.name,
                      fmt::format("lies below the file {}", member.name.substr(0, slash)));
      }
    }
  }
  return ok();
}

Status find_dist_info(Reading& r) {
  std::vector<std::string> found;
  auto note = [&found](std::string_view name) {
    std::string_view top = name.substr(0, name.find('/'));
    if (top.ends_with(".dist-info") && std::find(found.begin(), found.end(), top) == found.end()) {
      found.emplace_back(top);
    }
  };
  for (const WheelMember& member : r.contents.members) note(member.name);
  for (const std::string& dir : r.directories) note(dir);
  if (found.empty()) {
    return make_error(ExitCode::usage, "{}: no .dist-info directory; the wheel is refused",
                      r.display);
  }
  if (found.size() > 1) {
    std::sort(found.begin(), found.end());
    return make_error(ExitCode::usage,
                      "{}: more than one .dist-info directory ({}); the wheel is refused",
                      r.display, join(found, ", "));
  }
  const std::string& dir = found.front();
  std::string_view stem = std::string_view(dir).substr(0, dir.size() - 10);
  std::size_t dash = stem.rfind('-');
  const pep::WheelFilename& wf = r.contents.filename;
  bool matches = false;
  if (dash != std::string_view::npos) {
    auto version = pep::Version::try_parse(stem.substr(dash + 1));
    matches = pep::normalize_name(stem.substr(0, dash)) == wf.normalized_name && version &&
              *version == wf.version;
  }
  if (!matches) {
    return make_error(ExitCode::usage,
                      "{}: the directory {} does not match the wheel's name {} and version {}; "
                      "the wheel is refused",
                      r.display, dir, wf.name, wf.version.to_string());
  }
  r.contents.dist_info = dir;
  return ok();
}

Result<std::string> required_file(const Reading& r, std::string_view file) {
  std::string name = r.contents.dist_info + "/" + std::string(file);
  auto it = r.metadata_files.find(name);
  if (it == r.metadata_files.end()) {
    return make_error(ExitCode::usage, "{}: {} is missing; the wheel is refused", r.display, name);
  }
  return it->second;
}

Status check_wheel_file(Reading& r) {
  VENVFIX_TRY_ASSIGN(std::string text, required_file(r, "WHEEL"));
  std::string source = r.display + ": " + r.contents.dist_info + "/WHEEL";
  auto version = header_value(text, "Wheel-Version");
  if (!version) return make_error(ExitCode::usage, "{} has no Wheel-Version", source);
  std::string_view major = std::string_view(*version).substr(0, version->find('.'));
  if (major != "1") {
    return make_error(ExitCode::usage, "{} has Wheel-Version {}; only major version 1 is supported",
                      source, printable_excerpt(*version));
  }
  r.contents.root_is_purelib =
      to_lower_ascii(header_value(text, "Root-Is-Purelib").value_or("")) == "true";
  return ok();
}

Status check_metadata(Reading& r) {
  VENVFIX_TRY_ASSIGN(std::string text, required_file(r, "METADATA"));
  std::string source = r.display + ": " + r.contents.dist_info + "/METADATA";
  VENVFIX_TRY_ASSIGN(r.contents.metadata, dist::parse_metadata(text, source));
  const pep::WheelFilename& wf = r.contents.filename;
  auto version = pep::Version::try_parse(r.contents.metadata.version);
  if (pep::normalize_name(r.contents.metadata.name) != wf.normalized_name || !version ||
      *version != wf.version) {
    return make_error(ExitCode::usage,
                      "{} names {} {}, not the wheel's {} {}; the wheel is refused", source,
                      r.contents.metadata.name, printable_excerpt(r.contents.metadata.version),
                      wf.name, wf.version.to_string());
  }
  return ok();
}

// RECORD against the members: every member recorded (bar RECORD and its signatures), every
// row a member, sizes equal to the headers', sha256 for every hashed member.
Status check_record(Reading& r) {
  VENVFIX_TRY_ASSIGN(std::string text, required_file(r, "RECORD"));
  const std::string record_name = r.contents.dist_info + "/RECORD";
  VENVFIX_TRY_ASSIGN(r.contents.record, dist::parse_record(text, r.display + ": " + record_name));
  std::vector<bool> recorded(r.contents.members.size(), false);
  for (const dist::RecordEntry& row : r.contents.record) {
    auto it = r.member_index.find(row.path);
    if (it == r.member_index.end()) {
      return make_error(ExitCode::usage,
                        "{}: {} line {} lists {}, which is not in the archive; the wheel is "
                        "refused",
                        r.display, record_name, row.line, printable_excerpt(row.path, 200));
    }
    if (recorded[it->second]) {
      return make_error(ExitCode::usage, "{}: {} lists {} twice; the wheel is refused", r.display,
                        record_name, printable_excerpt(row.path, 200));
    }
    recorded[it->second] = true;
    WheelMember& member = r.contents.members[it->second];
    std::string_view file = std::string_view(member.name).substr(member.name.rfind('/') + 1);
    bool unhashed = member.name.rfind('/') == r.contents.dist_info.size() &&
                    member.name.starts_with(r.contents.dist_info) && is_record_signature(file);
    if (unhashed && row.hash_algorithm.empty()) continue;
    if (!row.sha256 || !row.size) {
      return make_error(ExitCode::usage,
                        "{}: {} line {} gives no sha256 hash and size for {}; the wheel is "
                        "refused",
                        r.display, record_name, row.line, printable_excerpt(row.path, 200));
    }
    if (*row.size != member.size) {
      return refuse(
          r, member.name,
          fmt::format("has {} bytes in its header but {} in RECORD", member.size, *row.size));
    }
    member.sha256 = row.sha256;
  }
  for (std::size_t i = 0; i < recorded.size(); ++i) {
    const WheelMember& member = r.contents.members[i];
    std::string_view file = std::string_view(member.name).substr(member.name.rfind('/') + 1);
    bool in_dist_info = member.name.rfind('/') == r.contents.dist_info.size() &&
                        member.name.starts_with(r.contents.dist_info);
    if (!recorded[i] && !(in_dist_info && is_record_signature(file))) {
      return refuse(r, member.name, "is not listed in RECORD");
    }
  }
  // The metadata files were read whole: check them now.
  for (const auto& [name, data] : r.metadata_files) {
    const WheelMember& member = r.contents.members[r.member_index.at(name)];
    if (member.sha256 && sha256(data) != *member.sha256) {
      return refuse(r, name, "does not match its sha256 in RECORD");
    }
  }
  return ok();
}

// `.data/<key>/<path>`: pip refuses other keys and files directly under .data.
Status check_data_members(const Reading& r) {
  static constexpr std::string_view k_keys[] = {"purelib", "platlib", "headers", "scripts", "data"};
  for (const WheelMember& member : r.contents.members) {
    std::string_view name = member.name;
    std::string_view top = name.substr(0, name.find('/'));
    if (!top.ends_with(".data") || top.size() == name.size()) continue;
    std::string_view rest = name.substr(top.size() + 1);
    std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos) {
      return refuse(r, name, "sits directly in the .data directory, not in <scheme key>/");
    }
    if (std::find(std::begin(k_keys), std::end(k_keys), rest.substr(0, slash)) ==
        std::end(k_keys)) {
      return refuse(r, name,
                    "uses an unknown .data scheme key (known: purelib, platlib, headers, "
                    "scripts, data)");
    }
  }
  return ok();
}

Status check_entry_points(Reading& r) {
  std::string name = r.contents.dist_info + "/entry_points.txt";
  auto it = r.metadata_files.find(name);
  if (it == r.metadata_files.end()) return ok();
  VENVFIX_TRY_ASSIGN(detail::EntryPointGroups groups,
                     detail::parse_entry_points(it->second, r.display + ": " + name));
  r.contents.console_scripts = std::move(groups.console_scripts);
  r.contents.gui_scripts = std::move(groups.gui_scripts);
  return ok();
}

Result<WheelContents> read_from(ZipReader zip, Reading r, const ReadLimits& limits) {
  VENVFIX_TRY(scan_entries(r, zip, limits));
  VENVFIX_TRY(check_prefixes(r));
  VENVFIX_TRY(find_dist_info(r));
  VENVFIX_TRY(check_wheel_file(r));
  VENVFIX_TRY(check_metadata(r));
  VENVFIX_TRY(check_record(r));
  VENVFIX_TRY(check_data_members(r));
  VENVFIX_TRY(check_entry_points(r));
  return std::move(r.contents);
}

Result<Reading> start(std::string_view filename, std::uint64_t archive_size) {
  Reading r;
  r.display = std::string(filename);
  auto parsed = pep::WheelFilename::parse(filename);
  if (!parsed) return with_context(std::move(parsed).error(), filename);
  r.contents.filename = std::move(*parsed);
  r.contents.display_name = r.display;
  r.contents.archive_size = archive_size;
  return r;
}

}  // namespace

Result<WheelContents> read_wheel(const fs::path& wheel_file, const ReadLimits& limits) {
  struct stat st {};
  if (::stat(wheel_file.c_str(), &st) != 0) {
    return make_error(ExitCode::usage, "{}: {}", wheel_file.string(), errno_message(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return make_error(ExitCode::usage, "{}: not a regular file", wheel_file.string());
  }
  VENVFIX_TRY_ASSIGN(Reading r,
                     start(wheel_file.filename().string(), static_cast<std::uint64_t>(st.st_size)));
  r.contents.source = wheel_file;
  VENVFIX_TRY_ASSIGN(ZipReader zip, ZipReader::open_file(wheel_file, wheel_file.string()));
  r.display = wheel_file.string();
  return read_from(std::move(zip), std::move(r), limits);
}

Result<WheelContents> read_wheel_bytes(std::span<const std::byte> data, std::string_view filename,
                                       const ReadLimits& limits) {
  VENVFIX_TRY_ASSIGN(Reading r, start(filename, data.size()));
  VENVFIX_TRY_ASSIGN(ZipReader zip, ZipReader::open_memory(data, std::string(filename)));
  return read_from(std::move(zip), std::move(r), limits);
}

}  // namespace venvfix::wheel
