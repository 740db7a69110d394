// The differential suite (docs/resolver.md §8): seeded random graphs of real shared objects in a
// real venv, loaded by that venv's python (the oracle, tests/elf/dlopen_oracle.py) and replayed
// by elf::Resolver. This header is the model both sides share: what a graph and a case are
// (differential_case.cpp draws them from a seed), and how the files, the test ld.so.cache and
// the oracle runs are made (differential_build.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace venvfix::elf::differential {

namespace fs = std::filesystem;

// What the loader sees outside the objects: the host's /etc/ld.so.cache or a test cache (which
// alone knows <root>/cachedir), with or without LD_LIBRARY_PATH=<root>/llp:<root>/missing.
enum class Env { host = 0, host_llp = 1, cache = 2, cache_llp = 3 };
inline constexpr int k_env_count = 4;
const char* env_name(Env env);
inline bool env_uses_cache(Env env) {
  return env == Env::cache || env == Env::cache_llp;
}
inline bool env_uses_llp(Env env) {
  return env == Env::host_llp || env == Env::cache_llp;
}

enum class PathKind { none, rpath, runpath };

struct Library {
  std::string soname;     // DT_SONAME; empty: none
  std::string file_name;  // the real file
  std::string link_name;  // a symlink to it beside every copy (libx.so.1 -> libx.so.1.2.3)
  std::string asked;      // the name other objects usually put in DT_NEEDED
  std::vector<std::string> needed;  // DT_NEEDED added before the template's libc.so.6
  PathKind kind = PathKind::none;
  std::string path;  // the DT_RPATH/DT_RUNPATH string
  bool nodeflib = false;
  std::vector<fs::path> dirs;  // one copy in each (absolute)

  std::vector<std::string> names() const;  // every name this library answers to on disk
};

struct Step {
  enum class Kind { preload, root, call };
  Kind kind = Kind::root;
  fs::path path;     // preload/root: the path opened; call: the caller's file
  std::string name;  // call: the name vfd_open passes to dlopen
};

struct Case {
  std::size_t number = 0;
  Env env = Env::host;
  std::vector<Step> steps;  // preloads, the root, then calls
};

struct Graph {
  std::size_t number = 0;
  std::vector<Library> libraries;
  std::vector<std::string> names;  // every name a case may bind (queried after each case)
  std::vector<Case> cases;
};

// Where a run puts things: `root` (a temp dir), the venv's site-packages, and the shared dirs.
struct Layout {
  fs::path root;
  fs::path site_packages;
  fs::path llp() const { return root / "llp"; }
  fs::path cachedir() const { return root / "cachedir"; }
  fs::path missing() const { return root / "missing"; }
  std::string ld_library_path() const { return llp().string() + ":" + missing().string(); }
};

inline constexpr std::size_t k_cases_per_graph = 5;

// Graph `number` of `seed`, its cases numbered from number * k_cases_per_graph. The same
// (seed, number) gives the same graph on every machine (std::mt19937_64, no distributions).
// `with_cache`: whether cases may use the test cache (needs root and unshare -m).
Graph generate(std::uint64_t seed, std::size_t number, const Layout& layout, bool with_cache);

// A readable account of a graph and one of its cases, for a disagreement.
std::string describe(const Graph& graph, const Case& c);

// Compiles the template objects into `dir` (once per run). Empty on success, else the error.
std::string build_templates(const fs::path& dir);
// Writes every library of the graphs: a template copy with the soname and search path written
// into its placeholders, then at most one patchelf call (--add-needed…, --no-default-lib).
std::string build_graphs(const fs::path& templates, const std::vector<Graph>& graphs,
                         const fs::path& scratch);
// ldconfig -X -C cache -f conf over layout.cachedir() (and the standard directories).
std::string build_test_cache(const Layout& layout, const fs::path& cache);

// Runs the oracle for every env that has cases: one python per env (LD_LIBRARY_PATH and the
// cache are fixed at interpreter start), forking per case. Fills `lines` with one JSON line
// per case (by case number).
std::string run_oracles(const Layout& layout, const fs::path& python, const fs::path& cache,
                        const std::vector<Graph>& graphs,
                        std::map<std::size_t, std::string>& lines);

}  // namespace venvfix::elf::differential
