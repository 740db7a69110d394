// glibc is the oracle for the resolver: seeded random graphs of real shared objects in a real
// venv's site-packages, loaded by that venv's python with ctypes.CDLL (tests/elf/
// dlopen_oracle.py), and replayed by elf::Resolver with the SystemView the python saw. Every
// step's outcome (dlerror() included), every name's binding (the loader's l_name), the loaded
// objects and the mapped files must agree (docs/resolver.md §8).
//
//   VENVFIX_DIFF_SEED=N   the seed (default 20261201)
//   VENVFIX_DIFF_CASES=N  how many cases (default 1100)
//   VENVFIX_DIFF_CASE=N   only case N of the seed (what a disagreement prints)
//   VENVFIX_DIFF_KEEP=1   keep the files (the path is printed)
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include <fmt/format.h>

#include "elf/differential.hpp"
#include "elf/elf_test_support.hpp"
#include "env/test_support.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/elf/resolver.hpp"

namespace venvfix::elf {
namespace {

namespace diff = differential;

std::optional<std::uint64_t> env_number(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  return std::strtoull(text, nullptr, 0);
}

// What one case did, as the oracle reports it or as the resolver replays it.
struct Outcome {
  std::vector<std::string> steps;            // "ok", "error: …", "no caller", "skipped"
  std::map<std::string, std::string> names;  // name -> l_name ("" when not loaded)
  std::set<std::string> objects;             // l_name of every loaded object under the root
  std::set<std::string> files;               // the mapped files under the root (canonical)
};

Outcome parse_oracle(const std::string& line) {
  Outcome out;
  const auto json = nlohmann::json::parse(line);
  if (json.contains("crash")) {
    out.steps.push_back("oracle crashed: " + json["crash"].dump());
    return out;
  }
  for (const auto& step : json["steps"]) {
    if (step.contains("ok")) {
      out.steps.emplace_back("ok");
    } else if (step.contains("error")) {
      out.steps.push_back("error: " + step["error"].get<std::string>());
    } else if (step.contains("no_caller")) {
      out.steps.emplace_back("no caller");
    } else {
      out.steps.emplace_back("skipped");
    }
  }
  for (const auto& [name, bound] : json["names"].items()) {
    out.names[name] = bound.is_null() ? std::string() : bound.get<std::string>();
  }
  for (const auto& name : json["objects"]) out.objects.insert(name.get<std::string>());
  for (const auto& name : json["maps"]) out.files.insert(name.get<std::string>());
  return out;
}

std::optional<std::size_t> live_object_of_file(const LoadGraph& graph, const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return std::nullopt;
  for (std::size_t i = 0; i < graph.objects.size(); ++i) {
    const LoadedObject& o = graph.objects[i];
    if (!o.unloaded && o.device == st.st_dev && o.inode == st.st_ino) return i;
  }
  return std::nullopt;
}

// The resolver's account of a case: the same steps, in the same order, then the same queries.
Outcome replay(Resolver& resolver, const diff::Graph& graph, const diff::Case& c,
               const std::string& prefix) {
  Outcome out;
  std::vector<fs::path> preloads;
  fs::path root;
  for (const diff::Step& step : c.steps) {
    if (step.kind == diff::Step::Kind::preload) preloads.push_back(step.path);
    if (step.kind == diff::Step::Kind::root) root = step.path;
  }
  auto loaded = resolver.load(root, preloads);
  if (!loaded) {
    out.steps.push_back("load error: " + loaded.error().message);
    return out;
  }
  LoadGraph& g = *loaded;
  for (const DlopenResult& preload : g.preloads) {
    out.steps.push_back(preload.ok() ? "ok" : "error: " + preload.error);
  }
  const bool root_ok = g.root_error.empty();
  out.steps.push_back(root_ok ? "ok" : "error: " + g.root_error);
  // load() keeps a failed root's closure for the analysis; glibc unloads it.
  if (!root_ok) {
    for (std::size_t i = g.root; i < g.objects.size(); ++i) g.objects[i].unloaded = true;
  }
  for (const diff::Step& step : c.steps) {
    if (step.kind != diff::Step::Kind::call) continue;
    if (!root_ok) {
      out.steps.emplace_back("skipped");
      continue;
    }
    auto caller = live_object_of_file(g, step.path);
    if (!caller) {
      out.steps.emplace_back("no caller");
      continue;
    }
    DlopenResult opened = resolver.dlopen(g, *caller, step.name);
    out.steps.push_back(opened.ok() ? "ok" : "error: " + opened.error);
  }
  // dlopen(name, RTLD_NOLOAD) from Python: a loaded name, else a search whose file is loaded.
  for (const std::string& name : graph.names) {
    std::string bound;
    if (auto index = g.find_loaded(name)) {
      bound = g.objects[*index].path.string();
    } else {
      Resolution r = resolver.resolve_dlopen(g, g.main_program, name);
      if (r.object && !g.objects[*r.object].unloaded) bound = g.objects[*r.object].path.string();
    }
    out.names[name] = bound;
  }
  for (const LoadedObject& o : g.objects) {
    // The main program's l_name is "" (ld.so names it so), and it is no object of the case.
    if (o.unloaded || o.reason == LoadReason::main_program ||
        !o.path.string().starts_with(prefix)) {
      continue;
    }
    out.objects.insert(o.path.string());
    std::error_code ec;
    out.files.insert(fs::canonical(o.path, ec).string());
  }
  return out;
}

struct Counts {
  std::size_t compared = 0;
  std::size_t agreed = 0;
  std::size_t steps = 0;
  std::size_t names = 0;
  std::size_t objects = 0;
  std::size_t files = 0;
};

// glibc ends "cannot open shared object file" with strerror(errno) of the last failed open();
// when the search opened nothing (a -z nodefaultlib object without search paths) errno is
// whatever the process left there, so that suffix is not compared.
std::string without_errno(std::string text) {
  const std::string suffix = ": No such file or directory";
  if (text.ends_with("cannot open shared object file" + suffix))
    text.resize(text.size() - suffix.size());
  return text;
}

// Compares two outcomes item by item; returns the differences, one per line.
std::string compare(const Outcome& oracle, const Outcome& ours, Counts& counts) {
  std::string diffs;
  auto check = [&](bool same, std::size_t& kind, const std::string& what) {
    ++counts.compared;
    ++kind;
    if (same) {
      ++counts.agreed;
    } else {
      diffs += "  " + what + "\n";
    }
  };
  const std::size_t steps = std::max(oracle.steps.size(), ours.steps.size());
  for (std::size_t i = 0; i < steps; ++i) {
    const std::string a = i < oracle.steps.size() ? oracle.steps[i] : "(none)";
    const std::string b = i < ours.steps.size() ? ours.steps[i] : "(none)";
    check(without_errno(a) == without_errno(b), counts.steps,
          fmt::format("step {}: glibc {} | venvfix {}", i, a, b));
  }
  for (const auto& [name, bound] : oracle.names) {
    auto it = ours.names.find(name);
    const std::string b = it == ours.names.end() ? "(not asked)" : it->second;
    check(
        bound == b, counts.names,
        name + ": glibc " + (bound.empty() ? "-" : bound) + " | venvfix " + (b.empty() ? "-" : b));
  }
  auto sets = [&](const std::set<std::string>& a, const std::set<std::string>& b, std::size_t& kind,
                  const char* what) {
    std::set<std::string> all(a.begin(), a.end());
    all.insert(b.begin(), b.end());
    for (const std::string& item : all) {
      const bool in_a = a.count(item) > 0;
      const bool in_b = b.count(item) > 0;
      check(in_a == in_b, kind,
            std::string(what) + " " + item + (in_a ? ": only glibc" : ": only venvfix"));
    }
  };
  sets(oracle.objects, ours.objects, counts.objects, "object");
  sets(oracle.files, ours.files, counts.files, "mapped file");
  return diffs;
}

bool can_use_test_cache() {
  return ::geteuid() == 0 &&
         testing::run_command("unshare -m --propagation private true").status == 0;
}

fs::path site_packages_of(const fs::path& venv) {
  std::error_code ec;
  for (fs::directory_iterator it(venv / "lib", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().starts_with("python")) return it->path() / "site-packages";
  }
  return {};
}

SystemView view_for(const SystemView& host, diff::Env env, const diff::Layout& layout,
                    const std::optional<LdCache>& test_cache) {
  SystemView view = host;
  if (diff::env_uses_cache(env)) view.cache = test_cache;
  if (diff::env_uses_llp(env))
    view.ld_library_path = split_ld_library_path(layout.ld_library_path());
  return view;
}

struct Settings {
  std::uint64_t seed = 20261201;
  std::size_t wanted = 1100;
  std::optional<std::uint64_t> only;
  bool keep = false;
};

Settings settings_from_env() {
  Settings s;
  s.seed = env_number("VENVFIX_DIFF_SEED").value_or(s.seed);
  s.wanted = env_number("VENVFIX_DIFF_CASES").value_or(s.wanted);
  s.only = env_number("VENVFIX_DIFF_CASE");
  s.keep = env_number("VENVFIX_DIFF_KEEP").value_or(0) != 0;
  return s;
}

std::vector<diff::Graph> draw_graphs(const Settings& s, const diff::Layout& layout,
                                     bool with_cache) {
  std::vector<diff::Graph> graphs;
  const std::size_t per = diff::k_cases_per_graph;
  const std::size_t first = s.only ? *s.only / per : 0;
  const std::size_t last = s.only ? first + 1 : (s.wanted + per - 1) / per;
  for (std::size_t g = first; g < last; ++g) {
    graphs.push_back(diff::generate(s.seed, g, layout, with_cache));
    if (s.only) {
      std::erase_if(graphs.back().cases, [&](const diff::Case& c) { return c.number != *s.only; });
    }
  }
  return graphs;
}

struct Totals {
  Counts counts;
  std::size_t cases = 0;
  std::size_t disagreeing = 0;
};

void compare_all(const Settings& s, const std::vector<diff::Graph>& graphs,
                 const std::map<std::size_t, std::string>& lines, std::vector<Resolver>& resolvers,
                 const std::string& prefix, Totals& totals) {
  for (const diff::Graph& graph : graphs) {
    for (const diff::Case& c : graph.cases) {
      ++totals.cases;
      auto it = lines.find(c.number);
      ASSERT_NE(it, lines.end()) << "no oracle answer for case " << c.number;
      Outcome ours = replay(resolvers[static_cast<std::size_t>(c.env)], graph, c, prefix);
      std::string diffs = compare(parse_oracle(it->second), ours, totals.counts);
      if (diffs.empty()) continue;
      if (++totals.disagreeing <= 10) {
        ADD_FAILURE() << "seed " << s.seed << " case " << c.number << " disagrees:\n"
                      << diffs << diff::describe(graph, c)
                      << "reproduce: VENVFIX_DIFF_SEED=" << s.seed
                      << " VENVFIX_DIFF_CASE=" << c.number
                      << " build/asan/venvfix_tests --gtest_filter='ElfDifferential.*'";
      }
    }
  }
}

TEST(ElfDifferential, ResolverAgreesWithGlibc) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  const Settings s = settings_from_env();
  std::optional<TempDir> dir;
  diff::Layout layout;
  if (s.keep) {
    layout.root = fs::temp_directory_path() / ("venvfix-diff-kept-" + std::to_string(::getpid()));
    fs::create_directories(layout.root);
  } else {
    auto created = TempDir::create("venvfix-diff-");
    ASSERT_TRUE(created);
    dir.emplace(std::move(*created));
    layout.root = fs::canonical(dir->path());
  }
  const fs::path venv = layout.root / "venv";
  ASSERT_TRUE(test_support::make_venv(venv));
  layout.site_packages = site_packages_of(venv);
  ASSERT_FALSE(layout.site_packages.empty());
  const bool with_cache = can_use_test_cache();
  const std::vector<diff::Graph> graphs = draw_graphs(s, layout, with_cache);

  ASSERT_EQ(diff::build_templates(layout.root / "templates"), "");
  ASSERT_EQ(diff::build_graphs(layout.root / "templates", graphs, layout.root), "");
  const fs::path cache_file = layout.root / "ld.so.cache";
  std::optional<LdCache> test_cache;
  if (with_cache) {
    ASSERT_EQ(diff::build_test_cache(layout, cache_file), "");
    auto loaded = LdCache::load(cache_file);
    ASSERT_TRUE(loaded) << loaded.error().message;
    test_cache = std::move(*loaded);
  }
  const auto built = clock::now();
  std::map<std::size_t, std::string> lines;
  ASSERT_EQ(diff::run_oracles(layout, venv / "bin" / "python", cache_file, graphs, lines), "");
  const auto oracled = clock::now();

  auto host = SystemView::host(UseLdLibraryPath::no);
  ASSERT_TRUE(host) << host.error().message;
  // One resolver per view, reused across cases: its caches must not carry one root's answer
  // into another's.
  auto source = std::make_shared<ElfSource>();
  std::vector<Resolver> resolvers;
  resolvers.reserve(diff::k_env_count);
  for (int e = 0; e < diff::k_env_count; ++e) {
    resolvers.emplace_back(view_for(*host, static_cast<diff::Env>(e), layout, test_cache), source,
                           venv / "bin" / "python");
  }
  Totals totals;
  compare_all(s, graphs, lines, resolvers, layout.root.string() + "/", totals);
  const auto done = clock::now();
  auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  const Counts& n = totals.counts;
  std::cout << "[ differential ] seed " << s.seed << ": " << totals.cases << " cases"
            << (with_cache ? "" : " (no test ld.so.cache: needs root and unshare -m)") << ", "
            << n.compared << " pairs compared (" << n.steps << " steps, " << n.names << " names, "
            << n.objects << " objects, " << n.files << " files), " << n.agreed << " agree, "
            << totals.disagreeing << " cases disagree; build " << ms(built - started)
            << " ms, glibc " << ms(oracled - built) << " ms, venvfix " << ms(done - oracled)
            << " ms\n";
  if (s.keep) std::cout << "[ differential ] files kept in " << layout.root << "\n";
  EXPECT_GE(totals.cases, s.only ? 1u : s.wanted);
}

}  // namespace
}  // namespace venvfix::elf
