// The real-world knowledge venvfix relies on, loaded from the versioned data files in
// manifests/ (see manifests/README.md for the schema and the sources of every entry):
// - which NVIDIA distribution provides which sonames, in which directory, for which CUDA major
//   and version range, and which libraries they load with dlopen;
// - which sonames the system or the GPU driver provides (never fetched);
// - torch's Python-side preload table.
//
// Loading validates every entry: a malformed file is an Error that names the file and entry.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"
#include "venvfix/pep/specifier.hpp"
#include "venvfix/pep/version.hpp"

namespace venvfix::manifest {

struct Library {
  std::string soname;
  std::string file;  // file name inside the distribution's lib_dir
  std::vector<std::string> needed;
  std::string rpath;
  std::string runpath;
  std::vector<std::string> dlopens;  // sonames this library loads with dlopen by bare name
};

struct Release {
  std::string versions;  // the specifier set as written
  pep::SpecifierSet specifier;
  std::vector<Library> libraries;
  std::vector<std::string> requires_dist;     // the wheel's own Requires-Dist names
  std::map<std::string, std::string> extras;  // meta-packages: extra -> requirement
  std::string source;

  const Library* find_library(std::string_view soname) const;
};

struct Distribution {
  std::string name;     // normalised
  int cuda_major = 0;   // 0: not tied to a CUDA major (meta-packages)
  std::string lib_dir;  // relative to site-packages, e.g. "nvidia/cudnn/lib"
  std::string preload_folder;
  bool meta = false;
  std::vector<Release> releases;
  std::string source;
  // Names that stand for this distribution on an index but are source-only placeholders
  // whose build fails ("nvidia-cublas-cu13" for nvidia-cublas): never installed.
  std::vector<std::string> placeholders;  // normalised

  // The release whose version range holds `version`; nullptr when none does.
  const Release* release_for(const pep::Version& version) const;
  // True when some release of this distribution ships `soname`.
  bool provides(std::string_view soname) const;
};

enum class Provider { system, driver };

struct SystemLibrary {
  std::string soname;
  Provider provider = Provider::system;
  std::string source;
};

struct PreloadLibrary {
  std::string folder;
  std::vector<std::string> globs;
  bool required = true;
};

// What a range of torch releases preloads after libtorch_global_deps.so loaded without error.
// One way is a fact; several mean the sources do not establish which one these releases take,
// so the analysis must consider every one of them.
struct PreloadWay {
  bool whole_table = false;          // every library of the table
  std::vector<std::string> folders;  // else these library folders ([] = nothing)
};

struct PreloadRule {
  std::string torch;  // the torch versions, a specifier set as written ("<2.6")
  pep::SpecifierSet versions;
  std::vector<PreloadWay> on_success;
  // Library folders the table of these releases does not have yet (searched on failure too).
  std::vector<std::string> exclude;
  std::string source;
};

// A torch build that manifests/torch.json lists, with what it is known to preload after a
// successful load (nullopt: not recorded; the version rules decide).
struct TorchBuild {
  std::string version;        // with its local label, "2.8.0+cu128"
  bool pypi_default = false;  // PyPI serves it without the local label ("2.8.0")
  std::optional<PreloadWay> on_success;
  std::vector<std::string> exclude;  // library folders its table does not have
};

// torch/__init__.py's _get_cuda_dep_paths: for each sys.path entry, each search pattern (with
// {folder} and {cuda_major} substituted) is globbed in order; the first hit is loaded.
struct TorchPreload {
  std::vector<std::string> search;
  std::vector<PreloadLibrary> libraries;
  std::vector<PreloadRule> rules;  // by torch version, first match wins
  std::vector<TorchBuild> builds;
  std::string source;

  // The build of this installed version: exact, or the PyPI default build of a version
  // without a local label. nullptr when not listed.
  const TorchBuild* find_build(std::string_view version) const;

  // The rule for this torch version (its local label ignored); nullptr when none matches.
  const PreloadRule* rule_for(const pep::Version& torch_version) const;
};

class Manifests {
 public:
  // Loads nvidia-wheels.json, system-libraries.json and torch.json from `dir`.
  static Result<Manifests> load(const fs::path& dir);
  // Where the manifests are: $VENVFIX_MANIFEST_DIR, else <exe>/../share/venvfix/manifests,
  // else the source tree the binary was built from.
  static fs::path default_dir();

  const std::vector<Distribution>& distributions() const { return m_distributions; }
  const Distribution* find_distribution(std::string_view name) const;  // normalises
  // The distribution `name` is a placeholder of (nvidia-cublas for nvidia-cublas-cu13);
  // nullptr when `name` is no placeholder. Normalises.
  const Distribution* placeholder_of(std::string_view name) const;
  // Distributions (of `cuda_major`, or any when 0) that ship `soname` in some release.
  std::vector<const Distribution*> providers_of(std::string_view soname, int cuda_major) const;
  // "system" or "driver" when the soname must never be fetched.
  std::optional<Provider> system_provider(std::string_view soname) const;
  const TorchPreload& torch_preload() const { return m_torch_preload; }
  // The newest "updated" date (YYYY-MM-DD) of the three files: how current venvfix's
  // knowledge of torch and the NVIDIA wheels is (`venvfix --version`). "" when none says.
  const std::string& updated() const { return m_updated; }

  // For tests: build from JSON text. `name` is used in error messages.
  static Result<Manifests> from_text(std::string_view nvidia_json, std::string_view system_json,
                                     std::string_view torch_json);

 private:
  std::vector<Distribution> m_distributions;
  std::vector<SystemLibrary> m_system_libraries;
  std::vector<std::string> m_system_globs;  // parallel to m_system_glob_providers
  std::vector<Provider> m_system_glob_providers;
  TorchPreload m_torch_preload;
  std::string m_updated;
};

}  // namespace venvfix::manifest
