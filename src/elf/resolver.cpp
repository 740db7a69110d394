// The ld.so simulation. Each step cites the glibc function it follows (glibc 2.36,
// elf/dl-load.c unless noted); docs/resolver.md explains the rules.
#include "venvfix/elf/resolver.hpp"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include "dst.hpp"

namespace venvfix::elf {

namespace {

std::string current_dir() {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  return ec ? std::string() : cwd.string();
}

fs::path display_dir(const std::string& dir) {
  if (dir.empty()) return ".";
  if (dir.size() > 1 && dir.back() == '/') return dir.substr(0, dir.size() - 1);
  return dir;
}

bool has_name(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::string_view search_step_name(SearchStep step) {
  switch (step) {
    case SearchStep::already_loaded:
      return "already loaded";
    case SearchStep::rpath:
      return "RPATH";
    case SearchStep::ld_library_path:
      return "LD_LIBRARY_PATH";
    case SearchStep::runpath:
      return "RUNPATH";
    case SearchStep::ld_cache:
      return "ld.so.cache";
    case SearchStep::default_dir:
      return "default directory";
    case SearchStep::direct_path:
      return "path";
  }
  return "?";
}

std::optional<std::size_t> LoadGraph::find_loaded(std::string_view name) const {
  // _dl_lookup_map: the name the object was opened as (l_name), a name it was asked for by
  // (l_libname), or its DT_SONAME.
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const LoadedObject& object = objects[i];
    if (object.unloaded) continue;
    if (object.path.native() == name || has_name(object.names, name) ||
        (object.info && !object.info->soname.empty() && object.info->soname == name)) {
      return i;
    }
  }
  return std::nullopt;
}

std::vector<std::pair<std::size_t, const Resolution*>> LoadGraph::unresolved() const {
  std::vector<std::pair<std::size_t, const Resolution*>> result;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    for (const Resolution& need : objects[i].needs) {
      if (!need.resolved()) result.emplace_back(i, &need);
    }
  }
  return result;
}

// What trying one candidate file gave (open_verify).
struct Resolver::Candidate {
  enum class Outcome { found, go_on, stop_list, fatal };
  Outcome outcome = Outcome::go_on;
  std::shared_ptr<const ElfRecord> record;
};

// One resolution in the context of a graph.
class Resolver::Session {
 public:
  Session(Resolver& resolver, const LoadGraph& graph) : m_resolver(resolver), m_graph(graph) {
    const LoadedObject& main = graph.objects[graph.main_program];
    m_class = main.info->elf_class;
    m_machine = main.info->machine;
    m_data = main.info->data_encoding;
  }

  // _dl_map_object: one soname asked for by `loader` (nullopt: the main program's own load),
  // through each search step in ld.so's order until one settles it.
  Resolution resolve(std::optional<std::size_t> loader, std::string_view asked) {
    Resolution r;
    r.soname = std::string(asked);
    std::optional<std::string> name = expand_tokens(loader, asked, r);
    if (!name) return r;
    if (auto loaded = m_graph.find_loaded(*name)) {
      r.step = SearchStep::already_loaded;
      r.object = *loaded;
      r.path = m_graph.objects[*loaded].path;
      return r;
    }
    if (name->find('/') != std::string::npos) {
      r.step = SearchStep::direct_path;
      Candidate c = try_file(*name, r);
      if (c.outcome == Candidate::Outcome::found) return found(r, *name, c);
      if (c.outcome != Candidate::Outcome::fatal) set_not_found(r, c.record.get());
      return r;
    }
    const LoadedObject* needing = loader ? &m_graph.objects[*loader] : nullptr;
    // _dl_map_new_object: RPATHs only when the needing object has no RUNPATH.
    if (needing == nullptr || !needing->info->has_runpath) {
      if (search_rpaths(loader, *name, r)) return r;
    }
    if (search_ld_library_path(*name, r)) return r;
    if (needing != nullptr && needing->info->has_runpath) {
      auto& list = m_resolver.search_list(m_graph, *loader, PathTag::runpath);
      if (search(list, *name, SearchStep::runpath, *loader, r) || !r.error.empty()) return r;
    }
    const bool nodeflib =
        (needing != nullptr ? *needing : m_graph.objects[m_graph.main_program]).info->nodeflib;
    if (search_cache(*name, nodeflib, r)) return r;
    if (!nodeflib && search_default_dirs(*name, r)) return r;
    set_not_found(r, nullptr);
    return r;
  }

 private:
  // DT_NEEDED strings may hold tokens; _dl_map_object_deps expands them first (expand_dst).
  // nullopt (with r.error set) when the substitution leaves nothing.
  std::optional<std::string> expand_tokens(std::optional<std::size_t> loader,
                                           std::string_view asked, Resolution& r) const {
    std::string name(asked);
    if (!detail::has_dst(name)) return name;
    auto expanded =
        loader ? detail::substitute_dst(name, dst_values(*loader)) : std::optional(name);
    if (!expanded || expanded->empty()) {
      r.error = fmt::format("{}: empty dynamic string token substitution", asked);
      return std::nullopt;
    }
    return expanded;
  }

  // The RPATHs of the loader chain, then the main program's (unless it was dlopened). True
  // when that settled the resolution (found, or a fatal error in r.error).
  bool search_rpaths(std::optional<std::size_t> loader, const std::string& name, Resolution& r) {
    bool did_main = false;
    std::size_t guard = 0;
    for (std::optional<std::size_t> l = loader; l && guard <= m_graph.objects.size();
         l = m_graph.objects[*l].loader, ++guard) {
      auto& list = m_resolver.search_list(m_graph, *l, PathTag::rpath);
      if (list.empty()) continue;
      if (search(list, name, SearchStep::rpath, *l, r) || !r.error.empty()) return true;
      did_main |= *l == m_graph.main_program;
    }
    const LoadedObject& main = m_graph.objects[m_graph.main_program];
    if (did_main || main.reason == LoadReason::dlopened) return false;
    auto& list = m_resolver.search_list(m_graph, m_graph.main_program, PathTag::rpath);
    if (list.empty()) return false;
    return search(list, name, SearchStep::rpath, m_graph.main_program, r) || !r.error.empty();
  }

  // LD_LIBRARY_PATH ($ORIGIN there is the main program's).
  bool search_ld_library_path(const std::string& name, Resolution& r) {
    if (m_resolver.m_system.ld_library_path.empty()) return false;
    const LoadedObject& main = m_graph.objects[m_graph.main_program];
    const bool canonical_origin =
        main.reason == LoadReason::main_program && m_resolver.m_executable.has_value();
    auto [list, fresh] =
        m_resolver.m_lists.try_emplace((canonical_origin ? "L:X:" : "L:") + main.path.string());
    if (fresh) {
      std::vector<std::string> elements;
      for (const fs::path& dir : m_resolver.m_system.ld_library_path) {
        elements.push_back(dir.string());
      }
      for (auto& d : detail::decompose(elements, dst_values(m_graph.main_program))) {
        list->second.push_back(m_resolver.search_dir(std::move(d.dir), std::move(d.entry)));
      }
    }
    return search(list->second, name, SearchStep::ld_library_path, std::nullopt, r) ||
           !r.error.empty();
  }

  // ld.so.cache; under -z nodefaultlib an entry in a default directory does not count.
  bool search_cache(const std::string& name, bool nodeflib, Resolution& r) {
    if (!m_resolver.m_system.cache) return false;
    r.searched_cache = true;
    auto cached =
        m_resolver.m_system.cache->find(name, m_class, m_machine, m_resolver.m_system.glibc_hwcaps);
    if (cached && nodeflib && under_default_dir(*cached)) cached.reset();
    if (!cached) return false;
    Candidate c = try_file(*cached, r);
    if (c.outcome == Candidate::Outcome::found) {
      r.step = SearchStep::ld_cache;
      found(r, *cached, c);
      return true;
    }
    return c.outcome == Candidate::Outcome::fatal;
  }

  bool search_default_dirs(const std::string& name, Resolution& r) {
    return search(m_resolver.m_default_dirs, name, SearchStep::default_dir, std::nullopt, r) ||
           !r.error.empty();
  }

  detail::DstValues dst_values(std::size_t object) const {
    const LoadedObject& o = m_graph.objects[object];
    detail::DstValues values;
    values.platform = m_resolver.m_system.platform;
    values.lib = m_resolver.m_system.lib;
    if (object == m_graph.main_program && o.reason == LoadReason::main_program &&
        m_resolver.m_executable) {
      // A program started by the kernel: ld.so takes $ORIGIN from /proc/self/exe, which is
      // canonical (a venv's bin/python symlink resolves to the real interpreter).
      std::error_code ec;
      fs::path real = fs::canonical(o.path, ec);
      values.origin = detail::origin_of(ec ? o.path.string() : real.string(), current_dir());
    } else {
      values.origin = detail::origin_of(o.path.string(), current_dir());
    }
    return values;
  }

  bool under_default_dir(const std::string& path) const {
    for (const fs::path& dir : m_resolver.m_system.default_dirs) {
      std::string prefix = dir.string();
      if (prefix.empty() || prefix.back() != '/') prefix += '/';
      if (path.starts_with(prefix)) return true;
    }
    return false;
  }

  // open_verify: whether the loader would take this file.
  Candidate try_file(const std::string& path, Resolution& r) {
    Candidate c;
    c.record = m_resolver.m_source->get(path);
    const ElfRecord& record = *c.record;
    switch (record.state) {
      case ElfRecord::State::missing:
      case ElfRecord::State::no_access:
        c.outcome = Candidate::Outcome::go_on;
        return c;
      case ElfRecord::State::unreadable:
        if (record.error_number == EISDIR) {
          r.error = fmt::format("{}: cannot read file data: {}", path, std::strerror(EISDIR));
          c.outcome = Candidate::Outcome::fatal;
        } else {
          c.outcome = Candidate::Outcome::stop_list;
        }
        return c;
      case ElfRecord::State::not_elf:
        r.error = fmt::format("{}: invalid ELF header", path);
        c.outcome = Candidate::Outcome::fatal;
        return c;
      case ElfRecord::State::corrupt:
        r.error = record.message;
        c.outcome = Candidate::Outcome::fatal;
        return c;
      case ElfRecord::State::elf:
        break;
    }
    const ElfInfo& info = *record.info;
    if (info.elf_class != m_class) {
      m_found_other_class = true;
      r.skipped.emplace_back(path);
      c.outcome = Candidate::Outcome::go_on;
      return c;
    }
    if (info.data_encoding != m_data) {
      r.error = fmt::format("{}: ELF file data encoding not {}", path,
                            m_data == k_data_lsb ? "little-endian" : "big-endian");
      c.outcome = Candidate::Outcome::fatal;
      return c;
    }
    if (info.machine != m_machine) {
      r.skipped.emplace_back(path);
      c.outcome = Candidate::Outcome::go_on;
      return c;
    }
    if (info.kind == ElfKind::relocatable || info.kind == ElfKind::other) {
      r.error = fmt::format("{}: only ET_DYN and ET_EXEC can be loaded", path);
      c.outcome = Candidate::Outcome::fatal;
      return c;
    }
    c.outcome = Candidate::Outcome::found;
    return c;
  }

  Resolution& found(Resolution& r, const std::string& path, const Candidate& c) {
    r.path = fs::path(path);
    r.error.clear();
    // _dl_map_object_from_fd: a file already loaded under another name is that object.
    const FileIdentity& id = c.record->stat_identity;
    if (id.device != 0 || id.inode != 0) {
      for (std::size_t i = 0; i < m_graph.objects.size(); ++i) {
        const LoadedObject& o = m_graph.objects[i];
        if (!o.unloaded && o.device == id.device && o.inode == id.inode) {
          r.object = i;
          break;
        }
      }
    }
    return r;
  }

  void set_not_found(Resolution& r, const ElfRecord* direct) {
    if (m_found_other_class) {
      r.error = fmt::format(
          "wrong ELF class: {}",
          elf_class_name(m_class == ElfClass::elf64 ? ElfClass::elf32 : ElfClass::elf64));
    } else if (direct != nullptr && !direct->message.empty()) {
      r.error =
          fmt::format("cannot open shared object file: {}",
                      std::strerror(direct->error_number != 0 ? direct->error_number : ENOENT));
    } else {
      r.error = "cannot open shared object file: No such file or directory";
    }
  }

  // open_path: tries `name` in every directory of `dirs` (each hwcaps subdirectory first).
  // True when found; false with r.error set when the loader would stop with an error.
  bool search(std::vector<SearchDir>& dirs, const std::string& name, SearchStep step,
              std::optional<std::size_t> via, Resolution& r) {
    for (SearchDir& dir : dirs) {
      r.searched.push_back(dir.display);
      for (ProbeDir& probe : dir.probes) {
        if (probe.listing == nullptr) probe.listing = &m_resolver.listing(probe.dir);
        const Listing& listing = *probe.listing;
        if (listing && !std::binary_search(listing->begin(), listing->end(), name)) continue;
        const std::string path = probe.dir + name;
        Candidate c = try_file(path, r);
        switch (c.outcome) {
          case Candidate::Outcome::found:
            r.step = step;
            r.via_object = via;
            r.via_entry = dir.entry;
            found(r, path, c);
            return true;
          case Candidate::Outcome::fatal:
          case Candidate::Outcome::stop_list:
            return false;
          case Candidate::Outcome::go_on:
            break;
        }
      }
    }
    return false;
  }

  Resolver& m_resolver;
  const LoadGraph& m_graph;
  ElfClass m_class = ElfClass::elf64;
  std::uint16_t m_machine = 0;
  std::uint8_t m_data = 0;
  bool m_found_other_class = false;
};

Resolver::Resolver(SystemView system, std::shared_ptr<ElfSource> source,
                   std::optional<fs::path> executable)
    : m_system(std::move(system)),
      m_source(source ? std::move(source) : std::make_shared<ElfSource>()),
      m_executable(std::move(executable)) {
  for (const fs::path& dir : m_system.default_dirs) {
    std::string text = dir.string();
    if (text.empty() || text.back() != '/') text += '/';
    m_default_dirs.push_back(search_dir(std::move(text), dir.string()));
  }
}

Resolver::SearchDir Resolver::search_dir(std::string dir, std::string entry) const {
  SearchDir out;
  for (const std::string& sub : m_system.hwcap_subdirs) out.probes.push_back({dir + sub + "/"});
  out.display = display_dir(dir);
  out.probes.push_back({std::move(dir)});
  out.entry = std::move(entry);
  return out;
}

const Resolver::Listing& Resolver::listing(const std::string& dir) {
  auto it = m_listings.find(dir);
  if (it != m_listings.end()) return it->second;
  Listing names;
  const std::string open_as = dir.empty() ? "." : dir;
  if (DIR* handle = ::opendir(open_as.c_str())) {
    names.emplace();
    while (const dirent* entry = ::readdir(handle)) names->emplace_back(entry->d_name);
    ::closedir(handle);
    std::sort(names->begin(), names->end());
  } else if (errno == ENOENT || errno == ENOTDIR) {
    names.emplace();  // nothing can be found there
  }
  // Other failures (EACCES on a searchable directory): unknown, every candidate is tried.
  return m_listings.emplace(dir, std::move(names)).first->second;
}

std::vector<Resolver::SearchDir>& Resolver::search_list(const LoadGraph& graph, std::size_t object,
                                                        PathTag tag) {
  const LoadedObject& o = graph.objects[object];
  const bool canonical_origin = object == graph.main_program && m_executable.has_value();
  std::string key = (tag == PathTag::runpath ? "R:" : "P:") +
                    std::string(canonical_origin ? "X:" : "") + o.path.string();
  auto it = m_lists.find(key);
  if (it != m_lists.end()) return it->second;
  std::vector<SearchDir> dirs;
  const std::vector<std::string>& elements =
      tag == PathTag::runpath ? o.info->runpath : o.info->effective_rpath();
  if (!elements.empty()) {
    detail::DstValues values;
    values.platform = m_system.platform;
    values.lib = m_system.lib;
    std::string origin_name = o.path.string();
    if (canonical_origin) {
      std::error_code ec;
      fs::path real = fs::canonical(o.path, ec);
      if (!ec) origin_name = real.string();
    }
    values.origin = detail::origin_of(origin_name, current_dir());
    for (auto& d : detail::decompose(elements, values)) {
      dirs.push_back(search_dir(std::move(d.dir), std::move(d.entry)));
    }
  }
  return m_lists.emplace(std::move(key), std::move(dirs)).first->second;
}

Resolution Resolver::resolve_dlopen(const LoadGraph& graph, std::size_t requester,
                                    std::string_view soname) {
  Session session(*this, graph);
  return session.resolve(requester, soname);
}

std::size_t Resolver::add_object(LoadGraph& graph, const fs::path& path, const ElfRecord& record,
                                 LoadReason reason, std::optional<std::size_t> loader,
                                 std::string name) {
  LoadedObject object;
  object.path = path;
  object.info = record.info;
  object.reason = reason;
  object.loader = loader;
  if (!name.empty()) object.names.push_back(std::move(name));
  object.device = record.stat_identity.device;
  object.inode = record.stat_identity.inode;
  graph.objects.push_back(std::move(object));
  return graph.objects.size() - 1;
}

void Resolver::bind(LoadGraph& graph, Resolution& r, std::optional<std::size_t> loader,
                    LoadReason reason, std::deque<std::size_t>& queue, bool add_name) {
  if (!r.path) return;
  if (r.object) {
    LoadedObject& existing = graph.objects[*r.object];
    if (add_name && r.step != SearchStep::already_loaded && !has_name(existing.names, r.soname)) {
      existing.names.push_back(r.soname);  // add_name_to_object
    }
    return;
  }
  auto record = m_source->get(*r.path);
  r.object = add_object(graph, *r.path, *record, reason, loader, r.soname);
  queue.push_back(*r.object);
}

void Resolver::load_needed(LoadGraph& graph, std::deque<std::size_t> queue,
                           std::vector<std::size_t>* added, std::size_t first_new) {
  // glibc stops a dlopen at its first missing name; the simulation goes on to report every
  // one, but from then on names no object loaded before this dlopen (glibc never got there).
  bool failed = false;
  while (!queue.empty()) {
    const std::size_t index = queue.front();
    queue.pop_front();
    if (added != nullptr) added->push_back(index);
    const auto info = graph.objects[index].info;
    std::vector<Resolution> needs;
    for (const std::string& needed : info->needed) {
      Session session(*this, graph);
      Resolution r = session.resolve(index, needed);
      const bool add_name = !failed || !r.object || *r.object >= first_new;
      bind(graph, r, index, LoadReason::needed, queue, add_name);
      failed |= !r.resolved();
      needs.push_back(std::move(r));
    }
    graph.objects[index].needs = std::move(needs);
  }
}

namespace {

// dlerror()'s text for a name that is not found: glibc prefixes the name to the messages that
// do not name a file already (_dl_signal_error with the name as objname).
std::string dlerror_text(const Resolution& r) {
  if (r.error.starts_with("cannot open shared object file") ||
      r.error.starts_with("wrong ELF class")) {
    return fmt::format("{}: {}", r.soname, r.error);
  }
  return r.error;
}

// The first failure of a closure in the order _dl_map_object_deps meets it.
std::string first_failure(const LoadGraph& graph, std::span<const std::size_t> objects) {
  for (std::size_t index : objects) {
    for (const Resolution& need : graph.objects[index].needs) {
      if (!need.resolved()) return dlerror_text(need);
    }
  }
  return {};
}

}  // namespace

DlopenResult Resolver::open(LoadGraph& graph, std::optional<std::size_t> caller,
                            std::string_view name, LoadReason reason, OnFailure on_failure) {
  DlopenResult result;
  Session session(*this, graph);
  result.resolution = session.resolve(caller, name);
  if (!result.resolution.resolved()) {
    result.error = dlerror_text(result.resolution);
    return result;
  }
  // The new object gets no loader: _dl_map_object drops it under __RTLD_CALLMAP.
  const std::size_t first_new = graph.objects.size();
  std::deque<std::size_t> queue;
  bind(graph, result.resolution, std::nullopt, reason, queue);
  load_needed(graph, std::move(queue), &result.added, first_new);
  result.error = first_failure(graph, result.added);
  if (!result.error.empty() && on_failure == OnFailure::unload) {
    for (std::size_t index : result.added) graph.objects[index].unloaded = true;
  }
  return result;
}

DlopenResult Resolver::dlopen(LoadGraph& graph, std::optional<std::size_t> caller,
                              std::string_view name) {
  return open(graph, caller, name, LoadReason::dlopened, OnFailure::unload);
}

Result<LoadGraph> Resolver::start(const fs::path& main_path,
                                  std::span<const fs::path> ld_preloads) {
  LoadGraph graph;
  auto read_required = [&](const fs::path& path) -> Result<std::shared_ptr<const ElfRecord>> {
    auto record = m_source->get(path);
    if (record->state != ElfRecord::State::elf) {
      return make_error(ExitCode::error, "cannot load {}: {}", path.string(), record->message);
    }
    return record;
  };
  VENVFIX_TRY_ASSIGN(auto main_record, read_required(main_path));
  graph.main_program = add_object(graph, main_path, *main_record, LoadReason::main_program,
                                  std::nullopt, std::string());

  // The dynamic loader is loaded before anything else; DT_NEEDED on its soname binds to it.
  const fs::path interpreter = !main_record->info->interpreter.empty()
                                   ? fs::path(main_record->info->interpreter)
                                   : m_system.interpreter;
  if (!interpreter.empty()) {
    auto record = m_source->get(interpreter);
    if (record->state == ElfRecord::State::elf) {
      add_object(graph, interpreter, *record, LoadReason::interpreter, std::nullopt,
                 interpreter.string());
    }
  }

  // do_preload (elf/rtld.c): each path with the main program as loader, before any DT_NEEDED.
  std::deque<std::size_t> queue{graph.main_program};
  for (const fs::path& path : ld_preloads) {
    Session session(*this, graph);
    DlopenResult preload;
    preload.resolution = session.resolve(graph.main_program, path.string());
    if (!preload.resolution.resolved()) preload.error = dlerror_text(preload.resolution);
    std::deque<std::size_t> added;
    bind(graph, preload.resolution, graph.main_program, LoadReason::preloaded, added);
    for (std::size_t index : added) queue.push_back(index);
    preload.added.assign(added.begin(), added.end());
    graph.preloads.push_back(std::move(preload));
  }
  load_needed(graph, std::move(queue));
  return graph;
}

Result<LoadGraph> Resolver::load(const fs::path& root, std::span<const fs::path> preloaded,
                                 PreloadAs as) {
  const bool ld_preload = as == PreloadAs::ld_preload || !m_executable;
  VENVFIX_TRY_ASSIGN(LoadGraph graph, start(m_executable ? *m_executable : root,
                                            ld_preload ? preloaded : std::span<const fs::path>()));
  if (!m_executable) {
    graph.root = graph.main_program;
    std::vector<std::size_t> all(graph.objects.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    graph.root_error = first_failure(graph, all);
    return graph;
  }
  // ctypes.CDLL(path) for each preload, in order, in the running interpreter.
  if (!ld_preload) {
    for (const fs::path& path : preloaded) {
      graph.preloads.push_back(
          open(graph, std::nullopt, path.string(), LoadReason::preloaded, OnFailure::unload));
    }
  }
  // dlopen(root): a path, so no search. Its closure is kept even when part of it is missing.
  DlopenResult opened =
      open(graph, std::nullopt, root.string(), LoadReason::dlopened, OnFailure::keep);
  if (!opened.resolution.path) {
    return make_error(ExitCode::error, "cannot load {}: {}", root.string(),
                      opened.resolution.error);
  }
  graph.root = *opened.resolution.object;
  graph.root_error = std::move(opened.error);
  return graph;
}

}  // namespace venvfix::elf
