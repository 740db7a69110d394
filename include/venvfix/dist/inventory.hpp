// The installed distributions of a venv: every *.dist-info (trusted: METADATA, RECORD,
// INSTALLER) and every legacy *.egg-info (listed, not trusted: no RECORD), and the ownership
// map from each path a RECORD lists to the distributions that list it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/dist/metadata.hpp"
#include "venvfix/dist/path_table.hpp"
#include "venvfix/dist/record.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::dist {

namespace fs = std::filesystem;

// What reading one metadata file of a .dist-info found (METADATA, RECORD).
enum class MetadataFileState {
  ok,
  missing,     // no such file
  empty,       // no bytes (or only white space): no header, no row
  unreadable,  // it exists but could not be read (permissions, a directory, too large)
  invalid,     // read, but METADATA lacks a valid Name or Version / RECORD has no usable row
};

struct Distribution {
  std::string name;             // METADATA's Name, else the one in the directory name
  std::string normalized_name;  // PEP 503
  std::string version;          // METADATA's Version, else the one in the directory name
  fs::path site_packages;       // the site-packages directory holding metadata_dir
  fs::path metadata_dir;        // the .dist-info (or .egg-info) directory or file
  std::string installer;        // INSTALLER's first line ("pip", "uv", "venvfix"); may be empty
  CoreMetadata metadata;        // empty fields when METADATA was unreadable (see problems)
  std::vector<RecordEntry> record;
  // Parallel to `record`: each row's path as an id in Inventory::paths (absolute, lexically
  // normal). Filled by read_inventory.
  std::vector<PathTable::Id> record_path_ids;
  bool legacy_egg_info = false;
  // The name and version in the directory's name ("torch-2.8.0+cu128.dist-info"), as written;
  // the version is empty for "foo.egg-info".
  std::string directory_name;
  std::string directory_version;
  // For a .dist-info: how its METADATA and RECORD read (egg-info: always ok, not checked).
  MetadataFileState metadata_state = MetadataFileState::ok;
  MetadataFileState record_state = MetadataFileState::ok;
  // One sentence per thing wrong with the metadata itself (missing/malformed METADATA or
  // RECORD, malformed RECORD rows). Findings about the files (ghosts, ...) are not here.
  std::vector<std::string> problems;
};

struct Inventory {
  std::vector<Distribution> distributions;  // sorted by normalized_name, then version
  // Every path a RECORD lists, once, absolute and lexically normalised (resolve_record_path).
  PathTable paths;

  // The first distribution with this name (normalised before comparing); nullptr if none.
  const Distribution* find(std::string_view name) const;
  // The owners of a path (made absolute and lexically normalised first; symlinks are not
  // followed): indices (ascending, no duplicates) of the distributions whose RECORD lists it;
  // empty when none does.
  std::vector<std::size_t> owners_of(const fs::path& path) const;
  // The same for a path of `paths`.
  std::span<const std::uint32_t> owners_of(PathTable::Id path) const {
    return std::span(m_owners).subspan(m_owner_starts[path],
                                       m_owner_starts[path + 1] - m_owner_starts[path]);
  }
  // The id of an absolute, lexically normal path, when a RECORD lists it.
  std::optional<PathTable::Id> path_id(std::string_view absolute_normal) const {
    return paths.find(absolute_normal);
  }
  // Fills `paths`, each distribution's record_path_ids and the owners (read_inventory does).
  // Error: more distinct RECORD paths than a PathTable holds.
  Status index_paths();

 private:
  // Owners of path i: m_owners[m_owner_starts[i], m_owner_starts[i+1]). Flat, not a vector per
  // path: 30,000 small allocations cost more than the scan they serve.
  std::vector<std::uint32_t> m_owner_starts{0};
  std::vector<std::uint32_t> m_owners;
};

// "<site-packages>/<record path>" made absolute and lexically normal ("a/../b" -> "b"), without
// following symlinks. An absolute record path is only normalised.
std::string resolve_record_path(const fs::path& site_packages, std::string_view record_path);

// Reads every distribution of every site-packages directory of `venv`. Broken metadata never
// fails the read: it becomes a problem on the distribution. Fails only when a site-packages
// directory cannot be listed. A directory whose name starts with '~' is no distribution: it is
// what pip's uninstall stash (AdjacentTempDirectory) leaves when pip is interrupted, and pip
// ignores it too ("Ignoring invalid distribution ~orch"); verify reports it (pip-stash).
Result<Inventory> read_inventory(const env::Venv& venv);

// The same, but each distribution `earlier` holds at the same metadata path, and for which
// `unchanged(metadata_dir)` is true, is taken from `earlier` (moved out of it) instead of read
// again: `run` reads the venv right before and right after its command, and knows which paths
// the command touched. Called from two threads at once.
Result<Inventory> read_inventory(const env::Venv& venv, Inventory& earlier,
                                 const std::function<bool(const fs::path&)>& unchanged);

}  // namespace venvfix::dist
