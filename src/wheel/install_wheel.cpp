// Phase two: the wheel install scheme of pip (src/pip/_internal/operations/install/wheel.py),
// into a staging directory laid out like the venv. docs/wheel.md, "Install scheme".
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "venvfix/base/parallel.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/dist/csv.hpp"
#include "venvfix/wheel/arriving_wheel.hpp"
#include "venvfix/wheel/unpacked_cache.hpp"
#include "venvfix/wheel/wheel.hpp"
#include "wheel/entry_points.hpp"
#include "wheel/member_stream.hpp"
#include "wheel/parallel_unpack.hpp"
#include "wheel/staging.hpp"
#include "wheel/zip_index.hpp"
#include "wheel/zip_reader.hpp"

namespace venvfix::wheel {

namespace {

using detail::Staging;

mode_t process_umask() {
  // /proc/self/status has it without the umask(2) set-and-restore race (Linux 4.7+).
  if (FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    unsigned value = 0;
    bool found = false;
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::sscanf(line, "Umask: %o", &value) == 1) {
        found = true;
        break;
      }
    }
    std::fclose(f);
    if (found) return static_cast<mode_t>(value & 0777);
  }
  mode_t old = ::umask(022);
  ::umask(old);
  return old;
}

std::string join_rel(std::string_view base, std::string_view sub) {
  if (base.empty()) return std::string(sub);
  if (sub.empty()) return std::string(base);
  return std::string(base) + "/" + std::string(sub);
}

std::string rel_to_root(const env::Venv& venv, const fs::path& dir) {
  return dir.lexically_normal().lexically_relative(venv.root.lexically_normal()).generic_string();
}

// What happens to one archive member.
struct Placement {
  bool install = false;
  std::string rel;      // destination relative to the venv root
  bool script = false;  // from .data/scripts: `#!python` is rewritten
};

struct Row {
  std::string path, hash, size;
  bool operator<(const Row& o) const {
    return std::tie(path, hash, size) < std::tie(o.path, o.hash, o.size);
  }
};

std::string hash_text(const Sha256Digest& digest) {
  return "sha256=" + to_base64url_nopad(digest);
}

bool is_entry_point_wrapper(std::string_view file, const WheelContents& contents) {
  std::string lower = to_lower_ascii(file);
  std::string_view match = file;
  if (lower.ends_with(".exe") || lower.ends_with(".pya")) {
    match.remove_suffix(4);
  } else if (lower.ends_with("-script.py")) {
    match.remove_suffix(10);
  }
  auto named = [match](const EntryPoint& e) { return e.name == match; };
  return std::any_of(contents.console_scripts.begin(), contents.console_scripts.end(), named) ||
         std::any_of(contents.gui_scripts.begin(), contents.gui_scripts.end(), named);
}

class Installer {
 public:
  Installer(const WheelContents& contents, const env::Venv& venv, const InstallOptions& options,
            Staging& staging)
      : m_contents(contents), m_venv(venv), m_options(options), m_staging(staging) {
    m_umask = options.umask.value_or(process_umask());
    m_file_mode = 0666 & ~m_umask;
    m_exec_mode = (0777 & ~m_umask) | 0111;
    m_lib = rel_to_root(venv, contents.root_is_purelib ? venv.purelib : venv.platlib);
    std::string python_xy = fmt::format("python{}.{}", venv.python.major, venv.python.minor);
    std::string headers_name = options.headers_name.value_or([&] {
      std::string name = contents.filename.name;
      std::replace(name.begin(), name.end(), '_', '-');
      return name;
    }());
    m_scheme = {{"purelib", rel_to_root(venv, venv.purelib)},
                {"platlib", rel_to_root(venv, venv.platlib)},
                {"scripts", "bin"},
                {"data", ""},
                {"headers", "include/site/" + python_xy + "/" + headers_name}};
    m_python = options.python_executable.value_or(venv.root / "bin" / "python").string();
    m_display = contents.source.empty() ? contents.display_name : contents.source.string();
  }

  Result<InstallResult> run() {
    VENVFIX_TRY(place_members());
    std::optional<Result<std::vector<detail::StreamedMember>>> ready;
    if (m_options.from_unpacked != nullptr) ready = copy_from_unpacked(*m_options.from_unpacked);
    const bool from_cache = ready.has_value();
    if (!ready && m_options.arriving != nullptr) ready = adopt_arrived(*m_options.arriving);
    VENVFIX_TRY_ASSIGN(auto streamed, ready ? std::move(*ready) : unpack());
    if (!from_cache && m_options.keep_unpacked != nullptr) keep_unpacked(streamed);
    for (std::size_t i = 0; i < m_placements.size(); ++i) {
      const Placement& p = m_placements[i];
      if (!p.install) continue;
      const WheelMember& member = m_contents.members[i];
      m_files[p.rel] = InstalledFile{p.rel, member.executable ? m_exec_mode : m_file_mode,
                                     member.size, streamed[i].sha256};
    }
    VENVFIX_TRY(fix_scripts());
    VENVFIX_TRY(generate_scripts());
    std::string info = join_rel(m_lib, m_contents.dist_info);
    VENVFIX_TRY(generate(info + "/INSTALLER", m_options.installer + "\n", m_file_mode));
    if (m_options.requested == Requested::yes) {
      VENVFIX_TRY(generate(info + "/REQUESTED", "", m_file_mode));
    }
    InstallResult result;
    result.adopted = m_adopted;
    result.record_text = record_text();
    VENVFIX_TRY(write_new(info + "/RECORD", result.record_text, m_file_mode));
    result.dist_info = info;
    for (auto& [rel, file] : m_files) result.files.push_back(std::move(file));
    result.directories = m_staging.created_directories();
    return result;
  }

 private:
  Error refuse(std::string_view member, std::string_view why) const {
    return make_error(ExitCode::usage, "{}: member {} {}; the wheel is refused", m_display, member,
                      why);
  }

  Status claim(const std::string& rel, std::string_view member) {
    if (rel == ".venvfix" || rel.starts_with(".venvfix/")) {
      return refuse(member, "would be installed into the venv's .venvfix state directory");
    }
    if (!m_destinations.emplace(rel, std::string(member)).second) {
      return refuse(member,
                    fmt::format("would be installed at {}, as {} is", rel, m_destinations[rel]));
    }
    return ok();
  }

  std::string record_path(const std::string& rel) const {
    return fs::path(rel).lexically_relative(m_lib).generic_string();
  }

  Status place_members() {
    const std::string& info = m_contents.dist_info;
    m_placements.resize(m_contents.members.size());
    for (std::size_t i = 0; i < m_contents.members.size(); ++i) {
      const std::string& name = m_contents.members[i].name;
      Placement& p = m_placements[i];
      std::string_view top = std::string_view(name).substr(0, name.find('/'));
      p.install = true;
      if (top.ends_with(".data") && top.size() < name.size()) {
        std::string_view rest = std::string_view(name).substr(top.size() + 1);
        std::size_t slash = rest.find('/');
        std::string key(rest.substr(0, slash));
        std::string_view sub = rest.substr(slash + 1);
        p.rel = join_rel(m_scheme.at(key), sub);
        if (key == "scripts") {
          p.script = true;
          if (is_entry_point_wrapper(sub.substr(sub.rfind('/') + 1), m_contents)) {
            p.install = false;  // pip leaves setuptools' wrappers out (is_entrypoint_wrapper)
          }
        }
      } else {
        p.rel = join_rel(m_lib, name);
        // Generated below: the wheel's own copies are not installed.
        if (name == info + "/RECORD" || name == info + "/INSTALLER" ||
            (name == info + "/REQUESTED" && m_options.requested == Requested::yes)) {
          p.install = false;
        }
      }
      if (p.install) {
        VENVFIX_TRY(claim(p.rel, name));
        m_installed_record[name] = record_path(p.rel);
      }
    }
    m_installed_record[info + "/RECORD"] = record_path(join_rel(m_lib, info + "/RECORD"));
    for (const char* file : {"RECORD", "INSTALLER", "REQUESTED"}) {
      VENVFIX_TRY(claim(join_rel(m_lib, info + "/" + file), "(generated)"));
    }
    m_scripts = detail::console_scripts_to_generate(m_contents.console_scripts, m_venv.python.major,
                                                    m_venv.python.minor);
    m_scripts.insert(m_scripts.end(), m_contents.gui_scripts.begin(), m_contents.gui_scripts.end());
    // A later script of the same name replaces an earlier one (distlib's clobber).
    std::vector<EntryPoint> unique;
    for (const EntryPoint& entry : m_scripts) {
      std::erase_if(unique, [&](const EntryPoint& e) { return e.name == entry.name; });
      unique.push_back(entry);
    }
    m_scripts = std::move(unique);
    for (const EntryPoint& entry : m_scripts) {
      VENVFIX_TRY(claim("bin/" + entry.name, "entry point " + entry.name));
    }
    return ok();
  }

  mode_t member_mode(std::size_t i) const {
    return m_contents.members[i].executable ? m_exec_mode : m_file_mode;
  }

  // The archive mapped, with its zip index, when that index agrees with what read_wheel saw
  // member for member; nullopt otherwise (a file replaced since then, an unusual layout).
  struct IndexedArchive {
    MappedFile archive;
    std::vector<detail::ZipIndexEntry> entries;
    std::vector<std::size_t> match;  // per member, its entry
  };
  std::optional<IndexedArchive> index_archive() const {
    auto archive = MappedFile::open(m_contents.source);
    if (!archive || archive->size() != m_contents.archive_size) return std::nullopt;
    auto entries = detail::read_zip_index(archive->bytes());
    if (!entries) return std::nullopt;
    auto match = detail::match_members(m_contents, *entries);
    if (!match) return std::nullopt;
    return IndexedArchive{std::move(archive).value(), std::move(*entries), std::move(*match)};
  }

  Result<std::vector<detail::StreamedMember>> unpack() {
    if (m_options.unpack == Unpack::parallel) {
      // A file that does not index falls to the streaming reader, which refuses it with the
      // precise reason.
      if (std::optional<IndexedArchive> indexed = index_archive()) {
        detail::UnpackConfig config{detail::unpack_threads(m_contents, m_options.threads),
                                    m_options.max_buffer_bytes, true};
        return detail::unpack_members(
            indexed->archive.bytes(), m_contents, indexed->entries, indexed->match, m_display,
            [this](std::size_t i) -> Result<Fd> {
              if (!m_placements[i].install) return Fd();
              return m_staging.create(m_placements[i].rel, member_mode(i));
            },
            config);
      }
    }
    VENVFIX_TRY_ASSIGN(detail::ZipReader zip,
                       detail::ZipReader::open_file(m_contents.source, m_display));
    Fd open_fd;
    return detail::stream_members(zip, m_contents, m_display, [&](std::size_t i) -> Result<int> {
      open_fd = Fd();
      const Placement& p = m_placements[i];
      if (!p.install) return -1;
      VENVFIX_TRY_ASSIGN(open_fd, m_staging.create(p.rel, member_mode(i)));
      return open_fd.get();
    });
  }

  // The members unpacked while the wheel downloaded, each renamed into place; nullopt (the
  // archive is read) unless every member of the central directory has its arrived twin: the
  // same name at the same offset with the same method, sizes and CRC, and RECORD's sha256.
  std::optional<Result<std::vector<detail::StreamedMember>>> adopt_arrived(ArrivingWheel& wheel) {
    const std::vector<ArrivedMember>& arrived = wheel.finish(m_contents.archive_size);
    if (arrived.empty()) return std::nullopt;
    std::optional<IndexedArchive> indexed = index_archive();
    if (!indexed) return std::nullopt;
    std::unordered_map<std::uint64_t, const ArrivedMember*> by_offset;
    for (const ArrivedMember& a : arrived) by_offset.emplace(a.data_offset, &a);
    std::vector<const ArrivedMember*> twin(m_contents.members.size());
    for (std::size_t i = 0; i < m_contents.members.size(); ++i) {
      const WheelMember& member = m_contents.members[i];
      const detail::ZipIndexEntry& e = indexed->entries[indexed->match[i]];
      const auto found = by_offset.find(e.data_offset);
      const ArrivedMember* a = found == by_offset.end() ? nullptr : found->second;
      if (a == nullptr || a->name != e.name || a->name != member.name || a->method != e.method ||
          a->compressed_size != e.compressed_size || a->size != e.size || a->crc32 != e.crc32 ||
          a->size != member.size || (member.sha256 && *member.sha256 != a->sha256)) {
        spdlog::debug(
            "{}: member {} arrived unlike the central directory or RECORD says; "
            "reading the archive",
            m_display, member.name);
        return std::nullopt;
      }
      twin[i] = a;
    }
    std::vector<detail::StreamedMember> streamed(m_contents.members.size());
    for (std::size_t i = 0; i < m_contents.members.size(); ++i) {
      streamed[i].sha256 = twin[i]->sha256;
      if (!m_placements[i].install) continue;
      Status adopted = m_staging.adopt(m_placements[i].rel, twin[i]->file, member_mode(i));
      if (!adopted) return Result<std::vector<detail::StreamedMember>>(adopted.error());
      ++m_adopted;
    }
    return Result<std::vector<detail::StreamedMember>>(std::move(streamed));
  }

  // Copies each installed member out of a cache entry, several at a time; nullopt when the
  // entry does not hold every one with RECORD's size and sha256 (then the archive is read).
  std::optional<Result<std::vector<detail::StreamedMember>>> copy_from_unpacked(
      const UnpackedWheel& entry) {
    std::vector<detail::StreamedMember> streamed(m_contents.members.size());
    std::vector<std::size_t> to_copy;
    for (std::size_t i = 0; i < m_placements.size(); ++i) {
      if (!m_placements[i].install) continue;
      const WheelMember& member = m_contents.members[i];
      auto found = entry.members.find(member.name);
      if (found == entry.members.end() || found->second.size != member.size ||
          (member.sha256 && *member.sha256 != found->second.sha256)) {
        spdlog::debug(
            "{}: the unpacked cache entry does not hold {} as RECORD says; reading "
            "the archive",
            m_display, member.name);
        return std::nullopt;
      }
      streamed[i].sha256 = found->second.sha256;
      to_copy.push_back(i);
    }
    // The pool carries on with fewer threads where the system refuses some.
    const Status copied = run_parallel(
        to_copy.size(), detail::unpack_threads(m_contents, m_options.threads),
        [&](std::size_t k, const JobContext&) { return copy_member(entry, to_copy[k]); });
    if (!copied) return Result<std::vector<detail::StreamedMember>>(copied.error());
    return Result<std::vector<detail::StreamedMember>>(std::move(streamed));
  }

  Status copy_member(const UnpackedWheel& entry, std::size_t i) {
    const WheelMember& member = m_contents.members[i];
    const UnpackedMember& cached = entry.members.find(member.name)->second;
    fs::path from = entry.member_path(member.name);
    VENVFIX_TRY_ASSIGN(Fd in, open_file(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (::fstat(in.get(), &st) != 0 || !cached.unchanged(file_identity_from(st))) {
      return make_error(ExitCode::error,
                        "{} changed while it was copied out of the unpacked-wheel cache; run "
                        "the command again",
                        from.string());
    }
    // A hard link only when the cached file already has this install's mode: the shared inode
    // is never changed.
    if (m_options.link_mode == LinkMode::hardlink && !m_placements[i].script &&
        (st.st_mode & 07777) == member_mode(i)) {
      return m_staging.link(m_placements[i].rel, from);
    }
    VENVFIX_TRY_ASSIGN(Fd out, m_staging.create(m_placements[i].rel, member_mode(i)));
    std::string what = m_staging.describe(m_placements[i].rel);
    if (member.size == 0 || ::ioctl(out.get(), FICLONE, in.get()) == 0) return ok();
    // No reflinks here: the kernel copies (page cache to page cache, no user-space buffer).
    std::uint64_t left = member.size;
    while (left > 0) {
      ssize_t n = ::copy_file_range(in.get(), nullptr, out.get(), nullptr, left, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
        break;  // a filesystem pair copy_file_range refuses: plain reads and writes below
      }
      if (n < 0) return make_error(ExitCode::error, "{}: {}", what, errno_message(errno));
      if (n == 0) {
        return make_error(ExitCode::error, "{} is shorter than the {} bytes recorded",
                          from.string(), member.size);
      }
      left -= static_cast<std::uint64_t>(n);
    }
    char buffer[1 << 16];
    while (left > 0) {
      ssize_t n = ::read(in.get(), buffer, std::min<std::uint64_t>(left, sizeof buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        return make_error(ExitCode::error, "{}: {}", from.string(),
                          n == 0 ? "shorter than recorded" : errno_message(errno));
      }
      VENVFIX_TRY(write_all(out.get(),
                            std::as_bytes(std::span(buffer, static_cast<std::size_t>(n))), what));
      left -= static_cast<std::uint64_t>(n);
    }
    return ok();
  }

  // Keeps the members just read from the archive (and checked) in the unpacked cache.
  void keep_unpacked(const std::vector<detail::StreamedMember>& streamed) {
    std::vector<MemberToKeep> keep;
    for (std::size_t i = 0; i < m_placements.size(); ++i) {
      const Placement& p = m_placements[i];
      if (!p.install) continue;
      // Scripts are rewritten in place below: the cache gets a copy, not a link.
      keep.push_back(MemberToKeep{m_contents.members[i].name, fs::path(m_staging.describe(p.rel)),
                                  p.script, m_contents.members[i].size, streamed[i].sha256});
    }
    if (Status kept =
            m_options.keep_unpacked->add(m_options.wheel_sha256_hex, m_contents.source, keep);
        !kept) {
      spdlog::debug("{} not kept in the unpacked-wheel cache: {}", m_display, kept.error().message);
    }
  }

  // pip's fix_script: a first line starting with `#!python` becomes `#!<python>\n`.
  Status fix_scripts() {
    for (std::size_t i = 0; i < m_placements.size(); ++i) {
      const Placement& p = m_placements[i];
      if (!p.install || !p.script) continue;
      // Read through the Result rather than moved out of it: GCC 12 at -O3 warns of a
      // maybe-uninitialized string in the moved-to copy (a false positive).
      Result<std::string> read = m_staging.read(p.rel);
      if (!read) return read.error();
      const std::string& text = *read;
      if (!text.starts_with("#!python")) continue;
      std::size_t nl = text.find('\n');
      std::string fixed =
          "#!" + m_python + "\n" + (nl == std::string::npos ? std::string() : text.substr(nl + 1));
      VENVFIX_TRY(m_staging.rewrite(p.rel, fixed));
      InstalledFile& file = m_files[p.rel];
      file.size = fixed.size();
      file.sha256 = sha256(fixed);
      m_changed.emplace(record_path(p.rel), p.rel);
    }
    return ok();
  }

  Status generate_scripts() {
    for (const EntryPoint& entry : m_scripts) {
      // distlib writes with the default mode, then ORs in 0555.
      VENVFIX_TRY(generate("bin/" + entry.name, detail::launcher_script(m_python, entry),
                           m_file_mode | 0555));
    }
    return ok();
  }

  Status write_new(const std::string& rel, std::string_view data, mode_t mode) {
    VENVFIX_TRY_ASSIGN(Fd fd, m_staging.create(rel, mode));
    VENVFIX_TRY(write_all(fd.get(), std::as_bytes(std::span(data.data(), data.size())),
                          m_staging.describe(rel)));
    m_files[rel] = InstalledFile{rel, static_cast<std::uint32_t>(mode), data.size(), sha256(data)};
    return ok();
  }

  Status generate(const std::string& rel, std::string_view data, mode_t mode) {
    VENVFIX_TRY(write_new(rel, data, mode));
    m_generated.push_back(rel);
    return ok();
  }

  // pip's get_csv_rows_for_installed + _normalized_outrows, written by csv.writer (CRLF).
  std::string record_text() const {
    std::vector<Row> rows;
    auto installed = m_installed_record;
    for (const dist::RecordEntry& entry : m_contents.record) {
      const std::string& info = m_contents.dist_info;
      if (entry.path == info + "/INSTALLER" ||
          (entry.path == info + "/REQUESTED" && m_options.requested == Requested::yes)) {
        continue;  // replaced by the generated file's row
      }
      std::string path = entry.path;
      if (auto it = installed.find(entry.path); it != installed.end()) {
        path = it->second;
        installed.erase(it);
      }
      Row row{path, "", ""};
      if (auto changed = m_changed.find(path); changed != m_changed.end()) {
        const InstalledFile& file = m_files.at(changed->second);
        row.hash = hash_text(file.sha256);
        row.size = std::to_string(file.size);
      } else {
        if (entry.sha256) row.hash = hash_text(*entry.sha256);
        if (entry.size) row.size = std::to_string(*entry.size);
      }
      rows.push_back(std::move(row));
    }
    for (const std::string& rel : m_generated) {
      const InstalledFile& file = m_files.at(rel);
      rows.push_back(Row{record_path(rel), hash_text(file.sha256), std::to_string(file.size)});
    }
    for (const auto& [member, path] : installed) rows.push_back(Row{path, "", ""});
    std::sort(rows.begin(), rows.end());
    std::string out;
    for (const Row& row : rows) {
      out += dist::csv_quote(row.path) + "," + dist::csv_quote(row.hash) + "," +
             dist::csv_quote(row.size) + "\r\n";
    }
    return out;
  }

  const WheelContents& m_contents;
  const env::Venv& m_venv;
  const InstallOptions& m_options;
  Staging& m_staging;
  mode_t m_umask = 022;
  mode_t m_file_mode = 0644;
  mode_t m_exec_mode = 0755;
  std::string m_lib;
  std::map<std::string, std::string> m_scheme;
  std::string m_python;
  std::string m_display;
  std::vector<Placement> m_placements;
  std::vector<EntryPoint> m_scripts;
  std::unordered_map<std::string, std::string> m_destinations;  // rel -> member
  std::map<std::string, std::string> m_installed_record;        // member -> record path
  std::unordered_map<std::string, std::string> m_changed;       // record path -> rel, rehashed
  std::vector<std::string> m_generated;                         // rel paths
  std::map<std::string, InstalledFile> m_files;                 // rel -> file, sorted
  std::size_t m_adopted = 0;  // members renamed in from m_options.arriving
};

}  // namespace

Result<InstallResult> install_wheel(const WheelContents& contents, const env::Venv& venv,
                                    const fs::path& staging_dir, const InstallOptions& options) {
  if (contents.source.empty()) {
    return make_error(ExitCode::error, "{}: read from memory; install_wheel needs the file",
                      contents.display_name);
  }
  VENVFIX_TRY_ASSIGN(Staging staging,
                     Staging::open(staging_dir, options.umask.value_or(process_umask())));
  Installer installer(contents, venv, options, staging);
  VENVFIX_TRY_ASSIGN(InstallResult result, installer.run());
  staging.commit();
  return result;
}

Result<InstallResult> install_wheel(const fs::path& wheel_file, const env::Venv& venv,
                                    const fs::path& staging_dir, const InstallOptions& options) {
  VENVFIX_TRY_ASSIGN(WheelContents contents, read_wheel(wheel_file));
  return install_wheel(contents, venv, staging_dir, options);
}

Status check_wheel_bytes(const WheelContents& contents, std::span<const std::byte> data) {
  // The parallel reader's path on one thread (it covers the central directory index), or
  // libarchive alone where the index does not agree with what read_wheel_bytes saw.
  if (auto entries = detail::read_zip_index(data)) {
    if (auto match = detail::match_members(contents, *entries)) {
      VENVFIX_TRY(detail::unpack_members(
          data, contents, *entries, *match, contents.display_name,
          [](std::size_t) -> Result<Fd> { return Fd(); }, detail::UnpackConfig{1, 1u << 20}));
      return ok();
    }
  }
  VENVFIX_TRY_ASSIGN(detail::ZipReader zip,
                     detail::ZipReader::open_memory(data, contents.display_name));
  VENVFIX_TRY(detail::stream_members(zip, contents, contents.display_name,
                                     [](std::size_t) -> Result<int> { return -1; }));
  return ok();
}

}  // namespace venvfix::wheel
