// Plan once, apply everywhere: `venvfix fetch PLAN --dest DIR` puts the wheels of a plan into a
// directory that a fleet serves from its own web server (a find-links "wheelhouse"), and
// `apply --find-links URL` on each host takes the plan's wheels from there instead of the
// index. The plan's sha256 decides on both sides: a wheelhouse file that differs is refused.
//
// Contract: fill_wheelhouse writes only into the download cache and `dest` (never a venv); a
// wheel is renamed into `dest` only once it is whole, checked and on disk, so a web server
// never serves half a file; after a failure `dest` holds what it held before plus the wheels
// that were complete.
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "venvfix/apply/stage.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/fetch/downloader.hpp"
#include "venvfix/index/client.hpp"
#include "venvfix/plan/document.hpp"

namespace venvfix::apply {

namespace fs = std::filesystem;

struct WheelhouseWheel {
  std::string file;  // the wheel's file name in `dest`
  std::string dist;
  std::string version;
  std::string sha256;
  std::uint64_t size = 0;
  bool from_cache = false;  // the download cache had it: nothing was downloaded
  bool written = false;     // copied into `dest` now (false: `dest` already held these bytes)
};

struct WheelhouseReport {
  fs::path dest;
  fs::path index_page;                  // dest/index.html: every wheel of `dest`, with its sha256
  std::vector<WheelhouseWheel> wheels;  // the plan's, in action order
  std::size_t listed = 0;               // wheels on the index page (earlier plans' included)
};

// Downloads every wheel the plan installs (the plan's sha256 and size checked; `sources` as for
// fetch_and_stage) and writes each into `dest` under its file name, unless `dest` already holds
// exactly those bytes. Then writes `dest/index.html`, a find-links page that links every
// `*.whl` in `dest` with a `#sha256=` fragment (pip, uv and venvfix read it; any web server
// serves it). Errors: a plan naming a bad file name (ExitCode::usage); a download or hash
// failure (ExitCode::network, naming the URL); `dest` not writable (ExitCode::error, naming it).
Result<WheelhouseReport> fill_wheelhouse(const plan::Plan& plan, fetch::Downloader& downloader,
                                         const fs::path& dest, const WheelSources& sources = {});

// The plan's wheels that the client's find-links list (by file name), to fetch from there:
// what `apply --find-links` uses instead of the plan's URLs. Errors: a find-links location that
// cannot be read (as IndexClient::find_links_listing).
Result<WheelSources> find_links_sources(const plan::Plan& plan, index::IndexClient& index);

// The `venvfix-fetch/1` document, and the same for people.
nlohmann::json wheelhouse_json(const WheelhouseReport& report);
void print_wheelhouse_report(const WheelhouseReport& report, std::ostream& out);

}  // namespace venvfix::apply
