// Draws the differential suite's graphs and cases from a seed (tests/elf/differential.hpp).
// Only std::mt19937_64's raw output is used (its sequence is fixed by the standard), so a seed
// and a case number name the same case everywhere.
#include <algorithm>
#include <random>
#include <set>
#include <sstream>

#include "elf/differential.hpp"

namespace venvfix::elf::differential {

namespace {

// splitmix64: one independent stream per (seed, graph).
std::uint64_t mix(std::uint64_t seed, std::uint64_t n) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (n + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : m_engine(seed) {}
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(m_engine() % n); }
  bool chance(std::size_t percent) { return below(100) < percent; }
  template <class T>
  const T& pick(const std::vector<T>& items) {
    return items[below(items.size())];
  }
  // An index drawn with the given weights.
  std::size_t weighted(const std::vector<std::size_t>& weights) {
    std::size_t total = 0;
    for (std::size_t w : weights) total += w;
    std::size_t r = below(total);
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (r < weights[i]) return i;
      r -= weights[i];
    }
    return weights.size() - 1;
  }
  template <class T>
  void shuffle(std::vector<T>& items) {
    for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
  }

 private:
  std::mt19937_64 m_engine;
};

struct Dirs {
  std::vector<fs::path> pool;  // a, b, c/lib, c/x of this graph, then llp and cachedir
  std::vector<std::size_t> weights{3, 3, 3, 2, 1, 1};
};

Dirs graph_dirs(const Layout& layout, std::size_t number) {
  const fs::path base = layout.site_packages / ("g" + std::to_string(number));
  return Dirs{{base / "a", base / "b", base / "c" / "lib", base / "c" / "x", layout.llp(),
               layout.cachedir()}};
}

// The names of library `i` (soname, file, link) in one of four shapes.
Library draw_names(Rng& rng, std::size_t graph, std::size_t i) {
  Library lib;
  const std::string base = "libvfd" + std::to_string(graph) + "x" + std::to_string(i);
  const std::size_t shape = rng.below(100);
  if (shape < 60) {  // the usual: file name = soname
    lib.file_name = lib.soname = lib.asked = base + ".so.1";
  } else if (shape < 72) {  // libx.so.1 -> libx.so.1.2.3
    lib.file_name = base + ".so.1.2.3";
    lib.soname = lib.link_name = base + ".so.1";
    lib.asked = rng.chance(75) ? lib.soname : lib.file_name;
  } else if (shape < 88) {  // DT_SONAME that differs from the file name
    lib.file_name = base + "_file.so";
    lib.soname = base + ".so.1";
    lib.asked = rng.chance(70) ? lib.file_name : lib.soname;
  } else {  // no DT_SONAME
    lib.file_name = lib.asked = base + ".so";
  }
  return lib;
}

std::string origin_entry(Rng& rng, const fs::path& from, const fs::path& to) {
  if (rng.chance(45)) return to.string() + (rng.chance(10) ? "/" : "");
  const std::string rel = to.lexically_relative(from).string();
  const std::string origin = rng.chance(80) ? "$ORIGIN" : "${ORIGIN}";
  return rel == "." ? origin : origin + "/" + rel;
}

void draw_path(Rng& rng, Library& lib, const std::vector<Library>& libs,
               const std::set<std::size_t>& reach, const Dirs& dirs, const Layout& layout) {
  const std::size_t kind = rng.below(100);
  lib.kind = kind < 30 ? PathKind::none : kind < 70 ? PathKind::rpath : PathKind::runpath;
  if (lib.kind == PathKind::none) return;
  const fs::path& home = lib.dirs.front();
  std::vector<std::string> entries;
  for (std::size_t j : reach) {
    if (rng.chance(55)) entries.push_back(origin_entry(rng, home, rng.pick(libs[j].dirs)));
  }
  if (rng.chance(15)) entries.emplace_back("$ORIGIN");
  if (rng.chance(10)) entries.push_back(layout.missing().string());
  if (rng.chance(10)) entries.emplace_back("$ORIGIN/../x");
  if (rng.chance(10)) entries.push_back(origin_entry(rng, home, rng.pick(dirs.pool)));
  if (entries.empty()) entries.emplace_back("$ORIGIN");
  rng.shuffle(entries);
  for (const std::string& entry : entries) lib.path += (lib.path.empty() ? "" : ":") + entry;
}

// The libraries reachable from `i` through the names they need (the file names they ask).
std::set<std::size_t> reachable(const std::vector<Library>& libs, std::size_t i) {
  std::set<std::size_t> seen;
  std::vector<std::size_t> todo{i};
  while (!todo.empty()) {
    const std::size_t k = todo.back();
    todo.pop_back();
    for (const std::string& name : libs[k].needed) {
      for (std::size_t j = 0; j < libs.size(); ++j) {
        const auto names = libs[j].names();
        if (std::find(names.begin(), names.end(), name) != names.end() && seen.insert(j).second) {
          todo.push_back(j);
        }
      }
    }
  }
  seen.erase(i);
  return seen;
}

fs::path instance_path(Rng& rng, const Library& lib) {
  const fs::path& dir = rng.pick(lib.dirs);
  return dir / (!lib.link_name.empty() && rng.chance(50) ? lib.link_name : lib.file_name);
}

std::string call_name(Rng& rng, Graph& graph, std::size_t case_number) {
  const std::size_t r = rng.below(100);
  const Library& lib = rng.pick(graph.libraries);
  if (r < 65) return lib.asked;
  if (r < 85) return rng.pick(lib.names());
  return "libvfd" + std::to_string(graph.number) + "none" + std::to_string(case_number) + ".so.1";
}

Case draw_case(Rng& rng, Graph& graph, std::size_t number, bool with_cache) {
  Case c;
  c.number = number;
  const std::size_t e = rng.below(100);
  if (with_cache) {
    c.env = e < 40 ? Env::host : e < 60 ? Env::host_llp : e < 85 ? Env::cache : Env::cache_llp;
  } else {
    c.env = e < 65 ? Env::host : Env::host_llp;
  }
  const auto& libs = graph.libraries;
  const std::size_t root = std::min(rng.below(libs.size()), rng.below(libs.size()));
  const std::size_t p = rng.below(100);
  for (std::size_t k = 0, n = p < 50 ? 0 : p < 85 ? 1 : 2; k < n; ++k) {
    c.steps.push_back({Step::Kind::preload, instance_path(rng, rng.pick(libs)), {}});
  }
  c.steps.push_back({Step::Kind::root, instance_path(rng, libs[root]), {}});
  std::vector<std::size_t> near{root};
  for (std::size_t j : reachable(libs, root)) near.push_back(j);
  const std::size_t q = rng.below(100);
  for (std::size_t k = 0, n = q < 35 ? 0 : q < 75 ? 1 : 2; k < n; ++k) {
    const Library& caller = libs[rng.chance(75) ? rng.pick(near) : rng.below(libs.size())];
    const fs::path file = rng.pick(caller.dirs) / caller.file_name;
    // The caller preloaded by path first: a dlopen from an object with no loader chain.
    if (rng.chance(25)) c.steps.insert(c.steps.begin(), {Step::Kind::preload, file, {}});
    c.steps.push_back({Step::Kind::call, file, call_name(rng, graph, number)});
  }
  return c;
}

}  // namespace

const char* env_name(Env env) {
  switch (env) {
    case Env::host:
      return "host ld.so.cache";
    case Env::host_llp:
      return "host ld.so.cache, LD_LIBRARY_PATH";
    case Env::cache:
      return "test ld.so.cache";
    case Env::cache_llp:
      return "test ld.so.cache, LD_LIBRARY_PATH";
  }
  return "?";
}

std::vector<std::string> Library::names() const {
  std::vector<std::string> out{file_name};
  if (!soname.empty() && soname != file_name) out.push_back(soname);
  if (!link_name.empty() && link_name != soname) out.push_back(link_name);
  return out;
}

Graph generate(std::uint64_t seed, std::size_t number, const Layout& layout, bool with_cache) {
  Rng rng(mix(seed, number));
  Graph graph;
  graph.number = number;
  const Dirs dirs = graph_dirs(layout, number);
  const std::size_t count = 3 + rng.below(4);
  for (std::size_t i = 0; i < count; ++i) {
    Library lib = draw_names(rng, number, i);
    const std::size_t first = rng.weighted(dirs.weights);
    lib.dirs.push_back(dirs.pool[first]);
    if (rng.chance(25)) {
      std::size_t second = rng.weighted(dirs.weights);
      if (second != first) lib.dirs.push_back(dirs.pool[second]);
    }
    lib.nodeflib = rng.chance(8);
    graph.libraries.push_back(std::move(lib));
  }
  auto& libs = graph.libraries;
  for (std::size_t i = 0; i < count; ++i) {
    std::vector<std::string> needed;
    for (std::size_t j = 0; j < count; ++j) {
      if (j == i || !rng.chance(j > i ? 40 : 5)) continue;  // j < i: a cycle, now and then
      needed.push_back(rng.chance(85) ? libs[j].asked : rng.pick(libs[j].names()));
    }
    if (rng.chance(7)) needed.push_back(libs[i].file_name + ".gone");
    for (const std::string& name : needed) {
      if (std::find(libs[i].needed.begin(), libs[i].needed.end(), name) == libs[i].needed.end()) {
        libs[i].needed.push_back(name);
      }
    }
    // patchelf --add-needed writes them in sorted order (a std::set), before libc.so.6.
    std::sort(libs[i].needed.begin(), libs[i].needed.end());
  }
  for (std::size_t i = 0; i < count; ++i) {
    draw_path(rng, libs[i], libs, reachable(libs, i), dirs, layout);
  }
  std::set<std::string> names;
  for (const Library& lib : libs) {
    for (const std::string& name : lib.names()) names.insert(name);
    names.insert(lib.needed.begin(), lib.needed.end());
  }
  for (std::size_t k = 0; k < k_cases_per_graph; ++k) {
    graph.cases.push_back(draw_case(rng, graph, number * k_cases_per_graph + k, with_cache));
    for (const Step& step : graph.cases.back().steps) {
      if (step.kind == Step::Kind::call) names.insert(step.name);
    }
  }
  names.erase("libc.so.6");
  graph.names.assign(names.begin(), names.end());
  graph.names.insert(graph.names.begin(), "libc.so.6");
  return graph;
}

std::string describe(const Graph& graph, const Case& c) {
  std::ostringstream out;
  out << "graph " << graph.number << ":\n";
  for (const Library& lib : graph.libraries) {
    out << "  " << lib.file_name;
    if (!lib.link_name.empty()) out << " (link " << lib.link_name << ")";
    out << " soname=" << (lib.soname.empty() ? "-" : lib.soname) << " needs=[";
    for (std::size_t i = 0; i < lib.needed.size(); ++i) out << (i ? " " : "") << lib.needed[i];
    out << "]";
    if (lib.kind != PathKind::none) {
      out << (lib.kind == PathKind::rpath ? " RPATH=" : " RUNPATH=") << lib.path;
    }
    if (lib.nodeflib) out << " nodeflib";
    out << " in";
    for (const fs::path& dir : lib.dirs) out << " " << dir.string();
    out << "\n";
  }
  out << "case " << c.number << " (" << env_name(c.env) << "):\n";
  for (const Step& step : c.steps) {
    switch (step.kind) {
      case Step::Kind::preload:
        out << "  preload " << step.path.string() << "\n";
        break;
      case Step::Kind::root:
        out << "  root " << step.path.string() << "\n";
        break;
      case Step::Kind::call:
        out << "  call vfd_open(" << step.name << ") in " << step.path.string() << "\n";
        break;
    }
  }
  return out.str();
}

}  // namespace venvfix::elf::differential
