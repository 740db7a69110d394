// Wheels (PEP 427, the binary distribution format): reading and checking a .whl before any
// byte of it is written, and installing it into a staging directory laid out like the venv,
// exactly as `pip install --no-deps --no-compile` lays it out. docs/wheel.md has the install
// scheme, the refusal rules and every place venvfix differs from pip on purpose.
//
// Contract of the module: nothing is ever written outside the staging directory the caller
// gives; a refused wheel leaves nothing behind there either.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/dist/metadata.hpp"
#include "venvfix/dist/record.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/pep/wheel_filename.hpp"

namespace venvfix::wheel {

class ArrivingWheel;
class UnpackedCache;
struct UnpackedWheel;

// Bounds that make a zip bomb an error instead of a full disk. The total uncompressed size
// (sum of the members' header sizes, which must equal RECORD's sizes and the bytes inflated)
// may not exceed min(max_total_bytes, max(ratio_floor_bytes, max_ratio * archive size)).
struct ReadLimits {
  std::uint64_t max_ratio = 100;
  std::uint64_t ratio_floor_bytes = 64ull << 20;
  std::uint64_t max_total_bytes = 32ull << 30;
  std::size_t max_members = 1'000'000;
  std::size_t max_metadata_bytes = 64u << 20;  // WHEEL, METADATA, RECORD, entry_points.txt
};

// One file of the archive (directory entries are checked, then dropped: pip creates
// directories only for the files in them).
struct WheelMember {
  std::string name;  // the archive path, validated (see docs/wheel.md, "Refusal rules")
  std::uint64_t size = 0;
  // From RECORD; empty only for RECORD itself and its signatures (RECORD.jws, RECORD.p7s).
  std::optional<Sha256Digest> sha256;
  bool executable = false;  // a regular file whose zip external attributes have an x bit
};

// An entry point of `console_scripts` or `gui_scripts`, as pip reads entry_points.txt.
struct EntryPoint {
  std::string name;    // the script name
  std::string module;  // `pip._internal.cli.main`
  std::string attr;    // `main` (may be dotted: `Cls.method`)
};

struct WheelContents {
  std::string display_name;  // the file name, for messages
  fs::path source;           // the .whl file; empty when read from memory
  pep::WheelFilename filename;
  std::string dist_info;  // the archive's `<name>-<version>.dist-info` directory
  bool root_is_purelib = false;
  dist::CoreMetadata metadata;
  std::vector<dist::RecordEntry> record;  // the wheel's RECORD rows, in file order
  std::vector<EntryPoint> console_scripts;
  std::vector<EntryPoint> gui_scripts;
  std::vector<WheelMember> members;  // regular files, in archive order
  std::uint64_t archive_size = 0;
  std::uint64_t total_size = 0;  // sum of members' sizes
};

// Opens and checks a .whl: the central directory, every member's name and type, WHEEL,
// METADATA, RECORD and entry_points.txt, RECORD against the members (sizes, presence), the
// zip-bomb limits. Member contents other than the metadata files are not inflated here:
// their hashes are checked while install_wheel (or check_wheel_bytes) streams them.
// Errors are ExitCode::usage with one sentence naming the wheel and the member.
Result<WheelContents> read_wheel(const fs::path& wheel_file, const ReadLimits& limits = {});

// The same over bytes in memory (fuzzing, tests); `filename` is the wheel's file name.
Result<WheelContents> read_wheel_bytes(std::span<const std::byte> data, std::string_view filename,
                                       const ReadLimits& limits = {});

// Inflates every member of `data` (the bytes `contents` was read from) and checks its size and
// sha256 against RECORD, writing nothing.
Status check_wheel_bytes(const WheelContents& contents, std::span<const std::byte> data);

enum class Requested { no, yes };

// How members come out of the unpacked-wheel cache (uv's --link-mode).
enum class LinkMode {
  // A hard link to the cache's file, as uv does by default on Linux: no byte is written, but
  // the venv shares the inode with the cache (and with other venvs installed the same way).
  hardlink,
  // A reflink clone where the filesystem has them, else a copy in the kernel.
  copy,
};

// How install_wheel reads the members (docs/wheel.md, "Speed"). Both apply every check.
enum class Unpack {
  // Several threads at once, straight out of the mapped archive: stored members copied,
  // deflate members up to InstallOptions::max_buffer_bytes inflated whole with libdeflate,
  // larger ones streamed through ISA-L in fixed-size pieces, other methods (bzip2, lzma)
  // streamed through libarchive in one pass. Falls back to `streaming` when the zip's
  // layout is unusual (libarchive's view and the central directory disagree).
  parallel,
  // One thread, libarchive alone, in archive order: the reference the tests compare against.
  streaming,
};

struct InstallOptions {
  Requested requested = Requested::no;  // write an empty REQUESTED (pip: a top-level requirement)
  std::string installer = "venvfix";    // INSTALLER's content, without the newline
  // The interpreter for `#!python` scripts and entry point launchers; default <venv>/bin/python.
  std::optional<fs::path> python_executable;
  // The umask pip would apply (files 0666 & ~umask, executables | 0111); default: the process's.
  std::optional<mode_t> umask;
  // The last component of the headers directory (include/site/pythonX.Y/<name>); default: the
  // wheel file name's project name with `_` as `-`, as pip names it for a wheel file.
  std::optional<std::string> headers_name;
  Unpack unpack = Unpack::parallel;
  // Threads for Unpack::parallel; 0: one per CPU, at most 8. Small wheels get fewer.
  unsigned threads = 0;
  // Unpack::parallel inflates a deflate member whole in one buffer per thread when it is at most
  // this large (so those buffers cost about threads x this); larger ones stream in fixed pieces.
  std::uint64_t max_buffer_bytes = 1ull << 20;
  // The unpacked-wheel cache (venvfix/wheel/unpacked_cache.hpp). With `from_unpacked`, each
  // member is copied out of that entry (a reflink clone where the filesystem has them) instead
  // of inflated; an entry that lacks a member or disagrees with RECORD is ignored and the
  // archive read. With `keep_unpacked`, members read from the archive are kept there as the
  // entry of the wheel whose sha256 is `wheel_sha256_hex` (a failure to keep them is logged,
  // never an install error).
  const UnpackedWheel* from_unpacked = nullptr;
  LinkMode link_mode = LinkMode::hardlink;  // scripts (rewritten in place) are always copied
  const UnpackedCache* keep_unpacked = nullptr;
  std::string wheel_sha256_hex;
  // The members unpacked while the wheel downloaded (venvfix/wheel/arriving_wheel.hpp): when
  // every one agrees with the central directory and RECORD, each is renamed into place instead
  // of inflated again; otherwise they are ignored and the archive read.
  ArrivingWheel* arriving = nullptr;
};

// One file written under the staging directory.
struct InstalledFile {
  std::string path;  // relative to the venv root (and the staging dir), "/"-separated
  std::uint32_t mode = 0;
  std::uint64_t size = 0;
  Sha256Digest sha256{};
};

struct InstallResult {
  std::string dist_info;                 // relative to the venv root
  std::vector<InstalledFile> files;      // sorted by path; RECORD and INSTALLER included
  std::vector<std::string> directories;  // created in staging, relative, parents first
  std::string record_text;               // the RECORD written (CRLF rows, as pip writes)
  std::size_t adopted = 0;  // members renamed in from InstallOptions::arriving, not inflated
};

// Installs `contents` into `staging_dir` (an existing directory, on the venv's filesystem, that
// will be moved into place by the caller) laid out relative to `venv.root`: site-packages files
// under lib/pythonX.Y/site-packages/..., scripts under bin/, data under the root, headers under
// include/site/pythonX.Y/<name>/. Reads each member once (inflate, sha256, write; on several
// threads, see Unpack). Never overwrites a file already in `staging_dir` (ExitCode::error naming
// it). After any failure, everything this call wrote or created in `staging_dir` is removed
// again. The wheel file is mapped into memory: it must not be truncated while the call runs
// (a blob of the download cache never is).
Result<InstallResult> install_wheel(const WheelContents& contents, const env::Venv& venv,
                                    const fs::path& staging_dir,
                                    const InstallOptions& options = {});

// read_wheel + install_wheel.
Result<InstallResult> install_wheel(const fs::path& wheel_file, const env::Venv& venv,
                                    const fs::path& staging_dir,
                                    const InstallOptions& options = {});

}  // namespace venvfix::wheel
