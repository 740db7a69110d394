// The steps of analyze(), each in its own file. Each step reads what the steps before it left
// in the Analysis and adds to it; none of them fails on a broken venv (that is a finding).
#pragma once

#include "venvfix/base/strings.hpp"
#include "venvfix/dist/file_check.hpp"
#include "venvfix/dist/hash_cache.hpp"
#include "venvfix/dist/scan.hpp"
#include "venvfix/verify/analysis.hpp"

namespace venvfix::verify {

// targets.cpp: --target, else torch, else every ELF holder; CUDA major; ELF objects.
Status select_targets(Analysis& analysis, const Options& options);

// requirements.cpp: the targets' Requires-Dist closure (markers and extras followed) marks
// distributions as needed; what no installed distribution satisfies is unmet.
void check_requirements(Analysis& analysis, const manifest::Manifests& manifests);

// loading.cpp: torch's Python-side preload, then every DT_NEEDED (and manifest dlopen) of the
// targets' objects resolved as ld.so would; unresolved and escaped sonames. The ELF files are
// read through `source` (see Options::elf_source).
void check_loading(Analysis& analysis, const manifest::Manifests& manifests,
                   const elf::SystemView& system, const std::shared_ptr<elf::ElfSource>& source);

// files.cpp: RECORD against disk — ghost files, clobbered files, shared paths. In two halves:
// the stat pass of every RECORD row (and the hash cache's load) needs only the inventory, so
// analyze() runs it beside the loading check, which decides what check_files hashes.
struct FileStatPass {
  dist::FileStats stats;
  dist::HashCache cache;
};
FileStatPass stat_record_files(const dist::Inventory& inventory, const env::Venv& venv,
                               const dist::KnownIdentity& known);
void check_files(Analysis& analysis, const Options& options, FileStatPass pass);

// layout.cpp: the walk of every site-packages for files named like shared objects, and pip's
// stash directories. It needs nothing but the venv, so analyze() runs it on its own thread
// beside the loading and file checks.
struct SiteScan {
  std::vector<dist::ScannedFile> files;
  std::vector<fs::path> stashes;
};
SiteScan scan_site(const env::Venv& venv);

// layout.cpp: split site-packages, CUDA mix, orphan libraries (and pip stashes, from the same
// walk: `scan`).
void check_layout(Analysis& analysis, const manifest::Manifests& manifests, const SiteScan& scan);

// layout.cpp: what removing distribution `removed_dist` the way pip and uv do (every RECORD
// path deleted, co-owners ignored) takes from the targets: each soname whose file would go and
// that no other file in the directories the loader searched for it (or torch's preload) would
// replace, sorted, with the first such file.
struct Breakage {
  std::vector<std::string> sonames;
  std::optional<fs::path> first_file;
};
Breakage removal_breaks(const Analysis& analysis, std::size_t removed_dist);
// distinfo.cpp: RECORD or METADATA missing, empty, unreadable or invalid; a directory name
// whose version (PEP 440) or name disagrees with METADATA.
void check_dist_info(Analysis& analysis);
// True when `record_path` (a RECORD row of `dist`) lies in a .dist-info directory and `dist`
// has a dist-info finding that already says why that file is absent or different (METADATA
// not usable, the directory renamed): files.cpp then reports no ghost for it.
bool dist_info_explains(const dist::Distribution& dist, std::string_view record_path);
// distinfo.cpp: one pip-stash warning per '~' directory (dist::scan_site_packages finds them;
// layout.cpp's orphan scan passes them on, so that site-packages is walked once).
void check_stashes(Analysis& analysis, const std::vector<fs::path>& stashes);

// layers.cpp: each finding about a distribution outside the environment's own layer names the
// layer (Finding::layer) and says so in its message.
void label_layers(Analysis& analysis);

// Helpers shared by the steps.
// True for a path inside the environment the loader and Python see: the venv or prefix root,
// or any of its site-packages (a base prefix's too: include-system-site-packages).
bool inside_environment(const env::Venv& venv, const fs::path& path);
// A RECORD path whose file name looks like a shared object ("lib/x.so.9", "_C.cpython-311-….so").
bool looks_like_shared_object(std::string_view path);
std::string dist_label(const dist::Distribution& dist);  // "nvidia-cudnn-cu12 9.10.2.21"

}  // namespace venvfix::verify
