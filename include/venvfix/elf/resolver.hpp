// A simulation of glibc's dynamic loader: which file each DT_NEEDED (or a dlopen by bare
// soname) of an object binds to, and why. The rules, with pointers into the glibc source, are
// written down in docs/resolver.md; in short, for a name without '/':
//
//   1. an already loaded object whose soname, or a name it was loaded under, equals the name;
//   2. unless the needing object has DT_RUNPATH: the DT_RPATH of the needing object, then of
//      the object that loaded it, and so on up (objects with DT_RUNPATH contribute none), then
//      the main program's DT_RPATH;
//   3. LD_LIBRARY_PATH (SystemView::ld_library_path);
//   4. the needing object's own DT_RUNPATH;
//   5. /etc/ld.so.cache (with DF_1_NODEFLIB: except entries under the default directories);
//   6. the default directories (not with DF_1_NODEFLIB).
//
// $ORIGIN, ${ORIGIN}, $LIB and $PLATFORM are expanded; every directory is tried with the
// SystemView's hwcaps subdirectories first. A candidate of another ELF class or machine is
// skipped and the search goes on; a candidate that is not a loadable ELF file stops it with
// the loader's error. A file already loaded under another path (same device and inode) binds
// to the loaded object.
//
// Objects opened with dlopen (the root, Python-side preloads, Resolver::dlopen) get no loader:
// glibc's dl_open_worker passes the caller only to choose the search path (__RTLD_CALLMAP), so
// the DT_RPATH chain of their dependencies ends at them. A dlopen whose name or any DT_NEEDED of
// its closure cannot be found fails as a whole: glibc unloads what it mapped (see `unloaded`).
//
// A Resolver is not thread-safe (it caches directory listings); use one per thread. The
// ElfSource it reads through may be shared between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/elf/elf_file.hpp"
#include "venvfix/elf/elf_source.hpp"
#include "venvfix/elf/system_view.hpp"

namespace venvfix::elf {

namespace fs = std::filesystem;

enum class SearchStep {
  already_loaded,  // bound to an object loaded before (by name or soname)
  rpath,  // a DT_RPATH entry (of via_object: the needing object, a loader, the main program)
  ld_library_path,  // an LD_LIBRARY_PATH entry
  runpath,          // a DT_RUNPATH entry of the needing object
  ld_cache,         // /etc/ld.so.cache
  default_dir,      // a default directory
  direct_path,      // the name contains '/': used as a path
};

std::string_view search_step_name(SearchStep step);

struct Resolution {
  std::string soname;            // the name asked for (DT_NEEDED string, dlopen argument)
  std::optional<fs::path> path;  // the file the loader opens; none: unresolved
  SearchStep step = SearchStep::default_dir;  // how it was found (meaningful when path is set)
  // The loaded object this binds to, in LoadGraph::objects (for resolve_dlopen: set only when
  // it was already loaded). When a file is found whose identity equals a loaded object, that
  // object is used: its path can then differ from `path`.
  std::optional<std::size_t> object;
  std::optional<std::size_t> via_object;  // whose DT_RPATH/DT_RUNPATH entry matched
  std::string via_entry;                  // the raw entry, e.g. "$ORIGIN/../../nvidia/cudnn/lib"
  std::vector<fs::path> searched;         // every directory tried, in order ("." = cwd)
  bool searched_cache = false;            // the ld.so.cache was consulted
  // Candidates passed over because they are for another class or machine.
  std::vector<fs::path> skipped;
  // Unresolved: the loader's message ("cannot open shared object file", "wrong ELF class:
  // ELFCLASS32", "<path>: invalid ELF header", …).
  std::string error;

  bool resolved() const { return path.has_value(); }
};

enum class LoadReason { main_program, interpreter, preloaded, needed, dlopened };

struct LoadedObject {
  fs::path path;  // as the loader names it (l_name): not canonicalised
  std::shared_ptr<const ElfInfo> info;
  LoadReason reason = LoadReason::needed;
  std::optional<std::size_t> loader;  // the object whose DT_NEEDED loaded it (l_loader)
  std::vector<std::string> names;     // the names it was asked for by (l_libname)
  std::vector<Resolution> needs;      // one per DT_NEEDED, in order
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  // Loaded by a dlopen that failed (a preload or Resolver::dlopen): glibc unloaded it again, so
  // nothing binds to it later; it stays in the graph so that its unresolved needs are seen.
  bool unloaded = false;
};

// What one dlopen did: a preload, the root, Resolver::dlopen.
struct DlopenResult {
  Resolution resolution;           // the name or path given to dlopen
  std::vector<std::size_t> added;  // the objects it loaded, in load order
  // dlerror()'s text when the dlopen fails, as glibc words it: the first name of the closure,
  // breadth-first, that is not found ("libx.so.1: cannot open shared object file: No such file
  // or directory"). Empty: it loads.
  std::string error;

  bool ok() const { return error.empty(); }
};

// How Resolver::load treats the preloaded paths.
enum class PreloadAs {
  // dlopen(path), in order, after the main program and its dependencies, before the root: what
  // ctypes.CDLL in a running interpreter does (torch's Python-side preload). A preload that fails
  // is unloaded and the next one is tried. Needs an executable; without one, as ld_preload.
  dlopen,
  // Before the main program's dependencies, with the main program as loader (LD_PRELOAD).
  ld_preload,
};

struct LoadGraph {
  std::vector<LoadedObject> objects;  // in load order
  std::size_t main_program = 0;
  std::size_t root = 0;
  std::vector<DlopenResult> preloads;  // one per preloaded path, in order
  // What dlopen(root) reports (the first name of its closure that is not found); empty: it
  // loads. The root's closure is kept in the graph either way (never `unloaded`), so that the
  // analysis sees every name it lacks.
  std::string root_error;

  // The loaded object a name binds to without a search (_dl_lookup_map), if any; never an
  // `unloaded` one.
  std::optional<std::size_t> find_loaded(std::string_view name) const;
  // Every unresolved need: (needing object, resolution).
  std::vector<std::pair<std::size_t, const Resolution*>> unresolved() const;
};

class Resolver {
 public:
  // `executable`: the main program (e.g. the venv's python). Without one, the root given to
  // load() is the main program, as under `ld.so --list ROOT`.
  explicit Resolver(SystemView system, std::shared_ptr<ElfSource> source = nullptr,
                    std::optional<fs::path> executable = std::nullopt);

  // Loads like ld.so: the main program, the interpreter, then breadth-first every DT_NEEDED;
  // `preloaded` paths as `as` says. With an executable configured, the root is then loaded as
  // dlopen(root) would, with its dependencies. Error: the root or the executable cannot be read
  // as an ELF object.
  Result<LoadGraph> load(const fs::path& root, std::span<const fs::path> preloaded = {},
                         PreloadAs as = PreloadAs::dlopen);

  // dlopen(name, RTLD_NOW) called from code in object `caller` (nullopt: the main program; for
  // a path the caller does not matter): a name without '/' is searched like a DT_NEEDED of the
  // caller (its DT_RPATH chain unless it has DT_RUNPATH, LD_LIBRARY_PATH, its DT_RUNPATH, the
  // cache, the default directories); the new object has no loader, and its DT_NEEDED closure
  // is added breadth-first. On failure the objects it added stay in the graph, `unloaded`.
  DlopenResult dlopen(LoadGraph& graph, std::optional<std::size_t> caller, std::string_view name);

  // Where dlopen(soname) called from object `requester` would find the library: the same
  // search as for a DT_NEEDED of `requester`. The graph is not changed (see dlopen()).
  Resolution resolve_dlopen(const LoadGraph& graph, std::size_t requester, std::string_view soname);

  const SystemView& system() const { return m_system; }
  ElfSource& source() { return *m_source; }

 private:
  using Listing = std::optional<std::vector<std::string>>;
  // One directory the loader tries for a search-path entry (a hwcaps subdirectory, or the
  // entry's directory itself), with its listing once first needed: a resolution that walks
  // fifteen RPATH entries then looks up no names to reach them.
  struct ProbeDir {
    std::string dir;                   // with one trailing '/', or "" for the current directory
    const Listing* listing = nullptr;  // into m_listings, whose nodes do not move
  };
  struct SearchDir {
    std::string entry;             // the raw entry it came from
    fs::path display;              // the directory as Resolution::searched names it
    std::vector<ProbeDir> probes;  // the hwcaps subdirectories first, then the directory
  };
  // `dir`: with one trailing '/', or "" for the current directory.
  SearchDir search_dir(std::string dir, std::string entry) const;
  struct Candidate;
  class Session;

  // The main program, the interpreter, `ld_preloads` (LD_PRELOAD) and their closure.
  Result<LoadGraph> start(const fs::path& main_path, std::span<const fs::path> ld_preloads);
  // unload: a dlopen that fails unloads what it loaded (glibc's dlopen); keep: the closure
  // stays, its gaps reported (the simulated root, whose whole closure is of interest).
  enum class OnFailure { unload, keep };
  DlopenResult open(LoadGraph& graph, std::optional<std::size_t> caller, std::string_view name,
                    LoadReason reason, OnFailure on_failure);
  std::size_t add_object(LoadGraph& graph, const fs::path& path, const ElfRecord& record,
                         LoadReason reason, std::optional<std::size_t> loader, std::string name);
  // Binds a resolution: to the object it names, or to a new object appended to `queue`.
  // `add_name`: whether a name found for a loaded object is added to its names.
  void bind(LoadGraph& graph, Resolution& r, std::optional<std::size_t> loader, LoadReason reason,
            std::deque<std::size_t>& queue, bool add_name = true);
  // _dl_map_object_deps: breadth-first over `queue`, each DT_NEEDED in order; `added` gets
  // every object it walks. Objects from `first_new` on are this dlopen's own.
  void load_needed(LoadGraph& graph, std::deque<std::size_t> queue,
                   std::vector<std::size_t>* added = nullptr, std::size_t first_new = 0);

  enum class PathTag { rpath, runpath };  // which of the object's DT_RPATH, DT_RUNPATH
  std::vector<SearchDir>& search_list(const LoadGraph& graph, std::size_t object, PathTag tag);
  // The names present in a directory (nullopt: not a listable directory).
  const Listing& listing(const std::string& dir);

  SystemView m_system;
  std::shared_ptr<ElfSource> m_source;
  std::optional<fs::path> m_executable;
  std::unordered_map<std::string, Listing> m_listings;
  // Search lists by kind and object path: DT_RPATH, DT_RUNPATH, LD_LIBRARY_PATH (by main program).
  std::unordered_map<std::string, std::vector<SearchDir>> m_lists;
  std::vector<SearchDir> m_default_dirs;
};

}  // namespace venvfix::elf
