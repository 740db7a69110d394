#include "txn/manifest.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>
#include <unordered_set>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/parallel.hpp"
#include "venvfix/base/strings.hpp"

#include "txn/paths.hpp"

namespace venvfix::txn {

namespace {

// Appends `text` to `out` with '%', newline, carriage return and tab escaped.
void append_escaped(std::string& out, std::string_view text) {
  if (find_first_of_few(text, "%\n\r\t") == std::string_view::npos) {
    out += text;
    return;
  }
  for (char c : text) {
    if (c == '%')
      out += "%25";
    else if (c == '\n')
      out += "%0A";
    else if (c == '\r')
      out += "%0D";
    else if (c == '\t')
      out += "%09";
    else
      out += c;
  }
}

std::string escape(std::string_view text) {
  std::string out;
  append_escaped(out, text);
  return out;
}

bool unescape(std::string_view text, std::string& out) {
  if (text.find('%') == std::string_view::npos) {
    out.assign(text);
    return true;
  }
  out.clear();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    std::string_view code = text.substr(i + 1, 2);
    if (code == "25")
      out += '%';
    else if (code == "0A")
      out += '\n';
    else if (code == "0D")
      out += '\r';
    else if (code == "09")
      out += '\t';
    else
      return false;
    i += 2;
  }
  return true;
}

// " <value>" (base 10 or 8) at the end of `out`: 30,000 manifest lines of numbers.
template <typename T>
void append_number(std::string& out, T value, int base = 10) {
  char buffer[24];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value, base);
  (void)error;  // 24 characters hold any 64-bit number
  out += ' ';
  out.append(buffer, end);
}

template <typename T>
bool parse_number(std::string_view text, T& value, int base = 10) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

std::string_view to_string(SnapshotKind kind) {
  return kind == SnapshotKind::tree ? "tree" : "transaction";
}

ManifestEntry entry_from_stat(char type, const struct stat& st, std::string path) {
  FileIdentity id = file_identity_from(st);
  ManifestEntry e;
  e.type = type;
  e.mode = type == 'S' ? 0777 : (id.mode & 07777);
  e.size = id.size;
  e.dev = id.device;
  e.ino = id.inode;
  e.nlink = static_cast<std::uint64_t>(st.st_nlink);
  e.mtime_ns = id.mtime_ns;
  e.ctime_ns = id.ctime_ns;
  e.path = std::move(path);
  return e;
}

ManifestEntry plain_entry(char type, std::uint32_t mode, std::string path) {
  ManifestEntry e;
  e.type = type;
  e.mode = mode;
  e.path = std::move(path);
  return e;
}

SnapshotInfo Manifest::info() const {
  SnapshotInfo info;
  info.id = id;
  info.kind = kind;
  info.created = created;
  info.reason = reason;
  info.method = method;
  info.format = format;
  for (const ManifestEntry& entry : entries) {
    if (entry.type == 'F' || entry.type == 'S') {
      ++info.files;
      info.bytes += entry.size;
    }
  }
  if (entries.empty() && header_files && header_bytes) {
    info.files = *header_files;
    info.bytes = *header_bytes;
  }
  return info;
}

namespace {

// Faults in the whole pages of [data, data + size), memory about to be filled, with one madvise
// (Linux 5.14+; elsewhere nothing happens) rather than a page fault per 4 KiB as it is written.
void populate(void* data, std::size_t size) {
  constexpr std::uintptr_t page = 4096;
  const auto at = reinterpret_cast<std::uintptr_t>(data);
  const std::size_t head = (page - at % page) % page;  // up to the first page boundary
  const std::size_t tail = (at + size) % page;         // past the last one
  if (size <= head + tail) return;
  (void)::madvise(static_cast<char*>(data) + head, size - head - tail, MADV_POPULATE_WRITE);
}

// Room for `count` entries, reserved and its pages faulted in at once: a 30,000-file venv's
// entries are 4 MB, and their page faults one by one cost a fresh process's parse more than the
// parse itself (docs/benchmarks.md).
void reserve_entries_of(std::vector<ManifestEntry>& entries, std::size_t count) {
  entries.reserve(count);
  populate(entries.data(), count * sizeof(ManifestEntry));
}

}  // namespace

void reserve_text(std::string& text, std::size_t size) {
  text.reserve(size);
  populate(text.data() + text.size(), text.capacity() - text.size());
}

std::string manifest_header_text(const Manifest& manifest, const SnapshotInfo& counted) {
  std::string out =
      fmt::format("venvfix-snapshot {}\nid {}\nkind {}\ncreated {}\nmethod {}\nreason {}\n",
                  manifest.format, manifest.id, to_string(manifest.kind), manifest.created,
                  manifest.method, escape(manifest.reason));
  if (manifest.kind == SnapshotKind::tree && manifest.format >= 3 && manifest.walked_ns != 0) {
    fmt::format_to(std::back_inserter(out), "walked {}\n", manifest.walked_ns);
  }
  if (manifest.format >= 3) {
    fmt::format_to(std::back_inserter(out), "files {}\nbytes {}\n", counted.files, counted.bytes);
  }
  out += "entries\n";
  return out;
}

void append_entry_line(std::string& out, const ManifestEntry& e, const Manifest& manifest) {
  const bool tree = manifest.kind == SnapshotKind::tree;
  out += e.type == 'D' && e.carried && tree && manifest.format >= 3 ? 'd' : e.type;
  append_number(out, e.mode, 8);
  for (std::uint64_t n : {e.size, e.dev, e.ino, e.nlink}) append_number(out, n);
  append_number(out, e.mtime_ns);
  append_number(out, e.ctime_ns);
  out += ' ';
  append_escaped(out, e.path);
  if (e.type == 'S' && manifest.format >= 2 && tree) {
    out += '\t';
    append_escaped(out, e.target);
  }
  out += '\n';
}

std::string manifest_text(const Manifest& manifest) {
  std::string out = manifest_header_text(manifest, manifest.info());
  reserve_text(out, out.size() + manifest.entries.size() * 128);
  for (const ManifestEntry& e : manifest.entries) append_entry_line(out, e, manifest);
  return out;
}

namespace {

// Each parser below returns what is wrong with its line, or "" when it is good.

// Line 1: "venvfix-snapshot <format>".
std::string parse_format_line(std::string_view line, Manifest& manifest) {
  if (!line.starts_with("venvfix-snapshot ")) return "not a venvfix snapshot manifest";
  if (!parse_number(line.substr(17), manifest.format)) return "bad format version";
  if (manifest.format > k_manifest_format) {
    return fmt::format("format version {} is newer than this venvfix understands ({})",
                       manifest.format, k_manifest_format);
  }
  if (manifest.format < k_oldest_manifest_format) return "bad format version";
  return "";
}

// A header line: "<key> <value>"; unknown keys are ignored (added by later versions).
std::string parse_header_line(std::string_view line, Manifest& manifest, bool& have_kind) {
  std::size_t space = line.find(' ');
  std::string_view key = line.substr(0, space);
  std::string_view value = space == std::string_view::npos ? "" : line.substr(space + 1);
  if (key == "id") {
    manifest.id = value;
  } else if (key == "kind") {
    if (value == "tree") {
      manifest.kind = SnapshotKind::tree;
    } else if (value == "transaction") {
      manifest.kind = SnapshotKind::transaction;
    } else {
      return "unknown kind";
    }
    have_kind = true;
  } else if (key == "created") {
    manifest.created = value;
  } else if (key == "method") {
    manifest.method = value;
  } else if (key == "reason") {
    if (!unescape(value, manifest.reason)) return "bad escape";
  } else if (key == "walked") {
    if (!parse_number(value, manifest.walked_ns)) return "bad walk time";
  } else if (key == "files" || key == "bytes") {
    // Written from 64-bit unsigned sums: read back the same way.
    std::uint64_t count = 0;
    if (!parse_number(value, count)) return "bad count";
    (key == "files" ? manifest.header_files : manifest.header_bytes) = count;
  }
  return "";
}

// The directories written `d` so far, looked up by a parent's path without a copy.
struct PathHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view path) const {
    return std::hash<std::string_view>()(path);
  }
};

// Version 3 tree snapshots: which entries are carried over (below a `d` directory). Entries come
// in walk order, so most have the previous entry's parent: its answer is kept.
struct CarriedDirs {
  std::unordered_set<std::string, PathHash, std::equal_to<>> dirs;
  std::string last_parent;
  bool last_carried = false;
  bool have_last = false;

  bool contains(std::string_view parent) {
    if (!have_last || parent != last_parent) {
      last_parent.assign(parent);
      last_carried = dirs.contains(parent);
      have_last = true;
    }
    return last_carried;
  }
  void add(const std::string& dir) {
    dirs.insert(dir);
    have_last = false;  // a directory added may be the parent kept
  }
};

// Version 3 tree snapshots: `d` is a D entry whose entries were carried over (a word of theirs
// only). The entries directly in it are marked by mark_carried_children once all are read.
std::string read_carried_dir(ManifestEntry& entry, const Manifest& manifest) {
  if (entry.type != 'd') return "";
  if (manifest.format < 3 || manifest.kind != SnapshotKind::tree) return "unknown entry type";
  entry.type = 'D';
  entry.carried = true;
  return "";
}

// Up to 19 decimal digits at the front of `rest` (any such number fits 64 bits unchecked), when a
// space follows them: how many, or 0 to leave the field to std::from_chars (a sign, more digits,
// no space after). Manifest lines are mostly such numbers (nanosecond times, devices, inodes):
// from_chars checks each digit's product for overflow.
std::size_t short_decimal(std::string_view rest, std::uint64_t& value) {
  constexpr std::size_t k_most = 19;
  std::uint64_t sum = 0;
  std::size_t used = 0;
  for (; used < rest.size() && used <= k_most; ++used) {
    const auto digit = static_cast<unsigned>(static_cast<unsigned char>(rest[used]) - '0');
    if (digit > 9) break;
    sum = sum * 10 + digit;
  }
  if (used == 0 || used > k_most || used == rest.size() || rest[used] != ' ') return 0;
  value = sum;
  return used;
}

// One number of an entry line, and the space after it, taken from the front of `rest`: the
// fields are scanned once, not split first (30,000 lines of eight fields).
template <typename T>
bool take_number(std::string_view& rest, T& value, int base = 10) {
  std::uint64_t short_value = 0;
  const std::size_t digits = base == 10 ? short_decimal(rest, short_value) : 0;
  if (digits != 0 && short_value <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
    value = static_cast<T>(short_value);
    rest.remove_prefix(digits + 1);
    return true;
  }
  auto [next, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value, base);
  const std::size_t used = static_cast<std::size_t>(next - rest.data());
  if (error != std::errc() || used == 0 || used == rest.size() || *next != ' ') return false;
  rest.remove_prefix(used + 1);
  return true;
}

// An entry: "<type> <mode> <size> <dev> <ino> <nlink> <mtime_ns> <ctime_ns> <escaped path>".
std::string read_entry_line(std::string_view line, const Manifest& manifest, ManifestEntry& entry) {
  auto too_few = [&](std::string_view rest) {
    return rest.find(' ') == std::string_view::npos ? "too few fields" : "bad number";
  };
  if (line.size() < 2 || line[1] != ' ') {
    return line.find(' ') == std::string_view::npos ? "too few fields" : "unknown entry type";
  }
  if (std::string_view("FSDdAC").find(line[0]) == std::string_view::npos) {
    return "unknown entry type";
  }
  entry.type = line[0];
  std::string_view rest = line.substr(2);
  if (!take_number(rest, entry.mode, 8) || !take_number(rest, entry.size) ||
      !take_number(rest, entry.dev) || !take_number(rest, entry.ino) ||
      !take_number(rest, entry.nlink) || !take_number(rest, entry.mtime_ns) ||
      !take_number(rest, entry.ctime_ns)) {
    return too_few(rest);
  }
  // Version 2 tree snapshots keep a symlink's target after a tab (escaped, as tabs in paths are).
  if (entry.type == 'S' && manifest.format >= 2 && manifest.kind == SnapshotKind::tree) {
    std::size_t tab = rest.find('\t');
    if (tab == std::string_view::npos) return "symlink entry without a target";
    if (!unescape(rest.substr(tab + 1), entry.target)) return "bad escape";
    rest = rest.substr(0, tab);
  }
  if (!unescape(rest, entry.path)) return "bad escape";
  if (!is_safe_relative(entry.path) || is_state_path(entry.path)) {
    return "path " + entry.path + " leaves the venv";
  }
  return read_carried_dir(entry, manifest);
}

// Read in place at the end of `out` (no entry moved); a bad one is taken off again.
std::string parse_entry_line(std::string_view line, const Manifest& manifest,
                             std::vector<ManifestEntry>& out) {
  std::string wrong = read_entry_line(line, manifest, out.emplace_back());
  if (!wrong.empty()) out.pop_back();
  return wrong;
}

// A file or symlink directly in a `d` directory is carried too; a directory there is not (every
// walk enters it and takes its identity afresh), and marking it would write it back as `d`. In
// file order, as written (walk order: a directory's line comes before its entries'), so only an
// earlier `d` line counts.
void mark_carried_children(Manifest& manifest) {
  if (manifest.format < 3 || manifest.kind != SnapshotKind::tree) return;
  CarriedDirs carried;
  for (ManifestEntry& entry : manifest.entries) {
    if (entry.type == 'D') {
      if (entry.carried) carried.add(entry.path);  // a `d` line
      continue;
    }
    if (carried.dirs.empty()) continue;
    const void* slash = ::memrchr(entry.path.data(), '/', entry.path.size());
    if (slash == nullptr) continue;
    entry.carried = carried.contains(std::string_view(
        entry.path.data(),
        static_cast<std::size_t>(static_cast<const char*>(slash) - entry.path.data())));
  }
}

// Entry lines read apart: what they hold, or the first bad one (its index among them, 0-based).
struct EntryLines {
  std::size_t bad_line = 0;
  std::string wrong;
};

// Reads the entry lines of `text` (whole lines; empty ones skipped) into `out`, up to the first
// bad one.
EntryLines parse_entry_lines(std::string_view text, const Manifest& manifest,
                             std::vector<ManifestEntry>& out) {
  EntryLines result;
  for (std::size_t at = 0, index = 0; at < text.size(); ++index) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line.empty()) continue;
    result.wrong = parse_entry_line(line, manifest, out);
    if (!result.wrong.empty()) {
      result.bad_line = index;
      return result;
    }
  }
  return result;
}

// From this many bytes of entries on (about 9,000 entries), the second half is read on a second
// thread: a 30,000-file venv's manifest is read by every later snapshot and every rollback.
constexpr std::size_t k_two_part_entries = std::size_t{1} << 20;

// The entry lines, `text`, starting at line `first_line` of `source`, into manifest.entries.
Status parse_entries(std::string_view text, std::size_t first_line, std::string_view source,
                     Manifest& manifest) {
  reserve_entries_of(manifest.entries, count_of(text, '\n'));
  std::size_t split = text.size();
  if (text.size() >= k_two_part_entries && std::thread::hardware_concurrency() > 1) {
    split = text.find('\n', text.size() / 2);
    split = split == std::string_view::npos ? text.size() : split + 1;
  }
  const std::string_view first = text.substr(0, split);
  const std::string_view second = text.substr(split);
  std::vector<ManifestEntry> second_entries;
  EntryLines parts[2];
  if (!second.empty()) {
    reserve_entries_of(second_entries, count_of(second, '\n'));
  }
  // Each part into its own vector (the first into the manifest's): no job touches another's.
  VENVFIX_TRY(run_parallel(second.empty() ? 1 : 2, 2, [&](std::size_t part, const JobContext&) {
    parts[part] = part == 0 ? parse_entry_lines(first, manifest, manifest.entries)
                            : parse_entry_lines(second, manifest, second_entries);
    return ok();
  }));
  for (std::size_t part = 0; part < 2; ++part) {
    if (parts[part].wrong.empty()) continue;
    std::size_t line = first_line + parts[part].bad_line;
    if (part == 1) line += count_of(first, '\n');
    return make_error(ExitCode::error, "{}, line {}: {}", source, line, parts[part].wrong);
  }
  manifest.entries.insert(manifest.entries.end(), std::make_move_iterator(second_entries.begin()),
                          std::make_move_iterator(second_entries.end()));
  mark_carried_children(manifest);
  return ok();
}

}  // namespace

Result<EntriesStart> parse_manifest_header(std::string_view text, std::string_view source,
                                           Manifest& manifest) {
  std::size_t line_number = 0;
  auto bad = [&](std::string_view what) {
    return make_error(ExitCode::error, "{}, line {}: {}", source, line_number, what);
  };
  bool in_entries = false;
  bool have_kind = false;
  std::size_t at = 0;
  while (at < text.size() && !in_entries) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    ++line_number;
    std::string wrong;
    if (line_number == 1) {
      wrong = parse_format_line(line, manifest);
    } else {
      in_entries = line == "entries";
      if (!in_entries) wrong = parse_header_line(line, manifest, have_kind);
    }
    if (!wrong.empty()) return bad(wrong);
  }
  if (!in_entries || !have_kind || !is_safe_id(manifest.id)) {
    return bad("incomplete header");
  }
  if (manifest.method != "reflink" && manifest.method != "hardlink" &&
      manifest.method != "rename") {
    return bad("unknown method " + manifest.method);
  }
  return EntriesStart{std::min(at, text.size()), line_number + 1};
}

bool shape_of_entry_line(std::string_view line, EntryLineShape& shape) {
  if (line.size() < 2 || line[1] != ' ') return false;
  shape.type = line[0];
  std::string_view rest = line.substr(2);
  // Seven numbers, each with the space after it: mode, size, dev, ino, nlink, mtime, ctime.
  for (int field = 0; field < 7; ++field) {
    const std::size_t space = rest.find(' ');
    if (space == std::string_view::npos || space == 0) return false;
    if (field == 1 && !parse_number(rest.substr(0, space), shape.size)) return false;
    rest.remove_prefix(space + 1);
  }
  if (shape.type == 'S') rest = rest.substr(0, rest.find('\t'));
  shape.raw_path = rest;
  return !rest.empty();
}

Result<ManifestEntry> parse_entry(std::string_view line, const Manifest& header) {
  ManifestEntry entry;
  if (std::string wrong = read_entry_line(line, header, entry); !wrong.empty()) {
    return make_error(ExitCode::error, "{}", wrong);
  }
  return entry;
}

namespace {

// The identity fields of an F entry line after its type, "<mode> <size> <dev> <ino> <nlink>
// <mtime_ns> "; false when one is not a number.
bool take_stored_identity(std::string_view rest, FileIdentity& id) {
  std::uint64_t nlink = 0;
  return take_number(rest, id.mode, 8) && take_number(rest, id.size) &&
         take_number(rest, id.device) && take_number(rest, id.inode) && take_number(rest, nlink) &&
         take_number(rest, id.mtime_ns);
}

}  // namespace

Result<Manifest> parse_manifest(std::string_view text, std::string_view source) {
  Manifest manifest;
  VENVFIX_TRY_ASSIGN(EntriesStart start, parse_manifest_header(text, source, manifest));
  if (start.at < text.size()) {
    VENVFIX_TRY(parse_entries(text.substr(start.at), start.line, source, manifest));
  }
  return manifest;
}

Status visit_stored_identities(std::string_view text, std::string_view source,
                               const std::function<void(const FileIdentity&)>& visit) {
  Manifest header;
  VENVFIX_TRY_ASSIGN(EntriesStart start, parse_manifest_header(text, source, header));
  if (header.format < 2 || header.kind != SnapshotKind::tree) return ok();
  std::size_t line = start.line;
  for (std::size_t at = start.at; at < text.size(); ++line) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view entry = text.substr(at, end - at);
    at = end + 1;
    if (entry.size() < 2 || entry[0] != 'F') continue;
    FileIdentity id;
    if (entry[1] != ' ' || !take_stored_identity(entry.substr(2), id)) {
      return make_error(ExitCode::error, "{}, line {}: bad file entry", source, line);
    }
    visit(id);
  }
  return ok();
}

Result<Manifest> read_manifest_file(const fs::path& file) {
  VENVFIX_TRY_ASSIGN(MappedFile text, map_manifest_file(file));
  return parse_manifest(text.view(), file.string());
}

Result<MappedFile> map_manifest_file(const fs::path& file) {
  VENVFIX_TRY_ASSIGN(MappedFile text, MappedFile::open(file));
  if (text.size() > (std::size_t{1} << 30)) {
    return make_error(ExitCode::error, "{}: larger than 1 GiB", file.string());
  }
  return text;
}

}  // namespace venvfix::txn
