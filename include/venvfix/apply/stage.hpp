// Step 1 of `apply`: fetch every wheel a plan installs and unpack it into the staging
// directory, before a single byte of the venv changes.
//
// Contract: download_plan_wheels writes only into the download cache; stage_wheels writes only
// under the staging directory it is given. Neither touches the venv.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
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
  fs::path path;           // the cache blob (read-only use)
  std::uint64_t size = 0;
  bool from_cache = false;
};

// Downloads the wheel of every install action of `plan`, in action order, with the plan's
// sha256 and size always checked. Errors are ExitCode::network and name the URL: a hash or
// size mismatch, an HTTP failure, offline without the file in the cache. Nothing but the
// download cache is written.
Result<std::vector<FetchedWheel>> download_plan_wheels(const plan::Plan& plan,
                                                       fetch::Downloader& downloader);

// What to unpack: one fetched wheel and how to install it.
struct StageItem {
  std::size_t action = 0;  // index into Plan::actions
  fs::path wheel;          // the .whl to read
  std::string file_name;   // the wheel's file name (the cache blob has none)
  wheel::Requested requested = wheel::Requested::no;
  // Set when the wheel comes out of the unpacked-wheel cache (`wheel` is then its wheel.whl).
  std::optional<wheel::UnpackedWheel> unpacked;
};

struct StagedWheel {
  std::size_t action = 0;
  std::string dist;  // the wheel's project name as METADATA spells it
  std::string version;
  wheel::InstallResult install;  // files relative to the venv root (and the staging dir)
};

struct StageOptions {
  int threads = 2;                 // wheels unpacked at once
  std::optional<mode_t> umask;     // default: the process's (as pip)
  std::optional<fs::path> python;  // for scripts; default <venv>/bin/python
  // The unpacked-wheel cache (wheel/unpacked_cache.hpp), normally <download cache>/unpacked:
  // a wheel found there is copied out of it without a download; one read from its archive is
  // kept there. Unset: no such cache.
  std::optional<fs::path> unpacked_cache;
  wheel::LinkMode link_mode = wheel::LinkMode::hardlink;
};

// Reads (every member checked against the wheel's RECORD, hostile members refused) and
// installs each item into `staging`, laid out like the venv root, exactly as
// `pip install --no-deps` lays it out, with INSTALLER `venvfix`. A wheel whose name or version
// differs from its action's is refused (ExitCode::usage). Two wheels that would write the same
// path are refused (ExitCode::error, naming the path and the wheel). Results are in `items`
// order.
// After a failure, `staging` may still hold other wheels' files: the caller discards it.
Result<std::vector<StagedWheel>> stage_wheels(const env::Venv& venv, const plan::Plan& plan,
                                              std::span<const StageItem> items,
                                              const fs::path& staging,
                                              const StageOptions& options = {});

struct FetchedAndStaged {
  std::vector<FetchedWheel> fetched;  // in action order
  std::vector<StagedWheel> staged;    // parallel to `fetched`
  double download_s = 0;              // until the last wheel was in the cache
  double stage_tail_s = 0;            // staging still running after that
};

// download_plan_wheels and stage_wheels overlapped: each wheel is staged as soon as it is in
// the cache (Downloader::download_each), `options.threads` at a time, while the others still
// download. A wheel whose sha256 has an intact entry in `options.unpacked_cache` is not
// downloaded: it is staged from that entry (`fetched[i].from_cache` is true). `requested(action
// index)` says whether to write REQUESTED (may be empty: never). Errors as the two functions give
// them: a download or hash failure is ExitCode::network; a staging failure stops the downloads. The
// venv is never written; after a failure the caller discards `staging`.
Result<FetchedAndStaged> fetch_and_stage(
    const env::Venv& venv, const plan::Plan& plan, fetch::Downloader& downloader,
    const fs::path& staging, const std::function<wheel::Requested(std::size_t)>& requested,
    const StageOptions& options = {});

}  // namespace venvfix::apply
