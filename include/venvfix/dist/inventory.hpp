// The installed distributions of a venv: every *.dist-info (trusted: METADATA, RECORD,
// INSTALLER) and every legacy *.egg-info (listed, not trusted: no RECORD), and the ownership
// map from each path a RECORD lists to the distributions that list it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/dist/metadata.hpp"
#include "venvfix/dist/record.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::dist {

namespace fs = std::filesystem;

struct Distribution {
  std::string name;             // METADATA's Name, else the one in the directory name
  std::string normalized_name;  // PEP 503
  std::string version;          // METADATA's Version, else the one in the directory name
  fs::path site_packages;       // the site-packages directory holding metadata_dir
  fs::path metadata_dir;        // the .dist-info (or .egg-info) directory or file
  std::string installer;        // INSTALLER's first line ("pip", "uv", "venvfix"); may be empty
  CoreMetadata metadata;        // empty fields when METADATA was unreadable (see problems)
  std::vector<RecordEntry> record;
  bool legacy_egg_info = false;
  // One sentence per thing wrong with the metadata itself (missing/malformed METADATA or
  // RECORD, malformed RECORD rows). Findings about the files (ghosts, ...) are not here.
  std::vector<std::string> problems;
};

struct Inventory {
  std::vector<Distribution> distributions;  // sorted by normalized_name, then version
  // Absolute, lexically normalised path -> indices (ascending, no duplicates) of the
  // distributions whose RECORD lists it.
  std::unordered_map<std::string, std::vector<std::size_t>> owners;

  // The first distribution with this name (normalised before comparing); nullptr if none.
  const Distribution* find(std::string_view name) const;
  // The owners of a path (made absolute and lexically normalised first; symlinks are not
  // followed); empty when no RECORD lists it.
  std::vector<std::size_t> owners_of(const fs::path& path) const;
};

// "<site-packages>/<record path>" made absolute and lexically normal ("a/../b" -> "b"), without
// following symlinks. An absolute record path is only normalised.
std::string resolve_record_path(const fs::path& site_packages, std::string_view record_path);

// Reads every distribution of every site-packages directory of `venv`. Broken metadata never
// fails the read: it becomes a problem on the distribution. Fails only when a site-packages
// directory cannot be listed.
Result<Inventory> read_inventory(const env::Venv& venv);

}  // namespace venvfix::dist
