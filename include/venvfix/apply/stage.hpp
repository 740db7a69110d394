// The "fetch and stage" phase of `apply`: fetch every wheel a plan installs and unpack it into
// the staging directory, before a single byte of the venv changes.
//
// Contract: fetch_and_stage writes only into the download cache (and the unpacked-wheel cache)
// and under the staging directory it is given. It never touches the venv.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/fetch/downloader.hpp"
#include "venvfix/plan/document.hpp"
#include "venvfix/wheel/unpacked_cache.hpp"
#include "venvfix/wheel/wheel.hpp"

namespace venvfix::apply {

namespace fs = std::filesystem;

// One install action's wheel, in the download cache.
struct FetchedWheel {
  std::size_t action = 0;  // index into Plan::actions
  fs::path path;           // the cache blob (read-only use); empty when it was streamed
  std::uint64_t size = 0;
  bool from_cache = false;
  // Downloaded without a file (StageOptions::while_downloading): its members went straight into
  // staging and into the unpacked-wheel cache; the download cache holds no .whl for it.
  bool streamed = false;
};

struct StagedWheel {
  std::size_t action = 0;
  std::string dist;  // the wheel's project name as METADATA spells it
  std::string version;
  wheel::InstallResult install;  // files relative to the venv root (and the staging dir)
};

// Where to fetch a plan's wheels instead of the URLs the plan names: wheel file name → URL
// (a fleet's wheelhouse, from --find-links). The plan's sha256 and size still decide.
using WheelSources = std::map<std::string, std::string>;

enum class WhileDownloading { unpack, wait };

struct StageOptions {
  int threads = 2;                 // wheels unpacked at once
  std::optional<mode_t> umask;     // default: the process's (as pip)
  std::optional<fs::path> python;  // for scripts; default <venv>/bin/python
  // The unpacked-wheel cache (wheel/unpacked_cache.hpp), normally <download cache>/unpacked:
  // a wheel found there is copied out of it without a download; one read from its archive is
  // kept there. Unset: no such cache.
  std::optional<fs::path> unpacked_cache;
  wheel::LinkMode link_mode = wheel::LinkMode::hardlink;
  WheelSources sources;
  // Whether a wheel's members are unpacked while it downloads (wheel/arriving_wheel.hpp) or
  // only once it is complete. Both check the same; `wait` is the reference the tests compare.
  // With `unpack`, and an unpacked-wheel cache on the staging directory's filesystem (so that
  // it keeps the installed form), the download writes no .whl at all: its bytes go straight to
  // the unpacking (fetch::BodyStream). A wheel whose arrived members cannot be adopted is then
  // downloaded again into the download cache and read from there.
  WhileDownloading while_downloading = WhileDownloading::unpack;
};

struct FetchedAndStaged {
  std::vector<FetchedWheel> fetched;  // in action order
  std::vector<StagedWheel> staged;    // parallel to `fetched`
  double download_s = 0;              // until the last wheel was in the cache
  double stage_tail_s = 0;            // staging still running after that
};

// Downloads the wheel of every install action of `plan` (from `options.sources` where it names
// the file, else from the action's URL; the plan's sha256 and size always checked) and stages each
// as soon as it is in the cache (Downloader::download_each), `options.threads` at a time, while the
// others still download. Staging reads the wheel (every member checked against its RECORD, hostile
// members refused) and installs it into `staging`, laid out like the venv root, exactly as `pip
// install --no-deps` lays it out, with INSTALLER `venvfix`. A wheel whose sha256 has an intact
// entry in `options.unpacked_cache` is not downloaded: it is staged from that entry
// (`fetched[i].from_cache` is true). `requested(action index)` says whether to write REQUESTED (may
// be empty: never). Errors: a download failure, a hash or size mismatch, offline without the file
// in the cache: ExitCode::network, naming the URL or file. A plan naming a file that is not a .whl
// name or the same file twice, or a wheel whose name or version differs from its action's, or a
// hostile wheel: ExitCode::usage. Two wheels that would write the same path: an error naming the
// path. A staging failure stops the downloads. The venv is never written; after a failure `staging`
// may hold other wheels' files: the caller discards it.
// The wheel of an install action as a download request: the plan's hash and size, fetched
// from `sources` where it names the file, else from the plan's URL.
fetch::DownloadRequest download_request(const plan::Install& action, const WheelSources& sources);

// Refuses (ExitCode::usage) a plan whose install actions name a file that is not a plain
// `.whl` file name, or one wheel twice: checked before anything is downloaded.
Status check_wheel_file_names(const plan::Plan& plan);

Result<FetchedAndStaged> fetch_and_stage(
    const env::Venv& venv, const plan::Plan& plan, fetch::Downloader& downloader,
    const fs::path& staging, const std::function<wheel::Requested(std::size_t)>& requested,
    const StageOptions& options = {});

}  // namespace venvfix::apply
