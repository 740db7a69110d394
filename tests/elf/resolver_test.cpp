// The resolver against the real dynamic loader: every scenario builds real shared objects with
// the system compiler and compares venvfix's answer with `ld.so --list`.
#include "venvfix/elf/resolver.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <map>

#include "elf/elf_test_support.hpp"

namespace venvfix::elf {
namespace {

using testing::build_shared_object;
using testing::CommandResult;
using testing::loader_list;
using testing::SharedObject;
using testing::Tags;

// ld.so prints a DT_NEEDED entry with its dynamic string tokens replaced; the graph keeps the
// entry as written. `origin` (when set) is what $ORIGIN stands for in the entries compared.
std::string as_printed(const std::string& name, const std::string& origin) {
  const std::string token = "$ORIGIN";
  if (origin.empty() || !name.starts_with(token)) return name;
  return origin + name.substr(token.size());
}

std::map<std::string, std::string> graph_entries(const LoadGraph& graph,
                                                 const std::string& origin = "") {
  std::map<std::string, std::string> entries;
  for (std::size_t i = 0; i < graph.objects.size(); ++i) {
    const LoadedObject& o = graph.objects[i];
    // ld.so prints "name => path" for objects asked for by a name other than their path.
    if (o.reason != LoadReason::main_program && o.reason != LoadReason::interpreter &&
        !o.names.empty() && as_printed(o.names.front(), origin) != o.path.string()) {
      entries[o.names.front()] = o.path.string();
    }
    for (const Resolution& need : o.needs) {
      if (!need.resolved()) entries[as_printed(need.soname, origin)] = "";
    }
  }
  return entries;
}

std::vector<std::string> graph_order(const LoadGraph& graph, const std::string& origin = "") {
  std::vector<std::string> order;
  for (const LoadedObject& o : graph.objects) {
    if (o.reason != LoadReason::main_program && o.reason != LoadReason::interpreter &&
        !o.names.empty() && as_printed(o.names.front(), origin) != o.path.string()) {
      order.push_back(o.path.string());
    }
  }
  return order;
}

// Asserts that venvfix and ld.so agree on every name -> path and on the load order.
void expect_same_as_loader(const LoadGraph& graph, const testing::LoaderListing& listing,
                           const std::string& origin = "") {
  std::map<std::string, std::string> expected;
  std::vector<std::string> expected_order;
  for (const auto& [name, path] : listing.entries) {
    expected[name] = path;
    if (!path.empty()) expected_order.push_back(path);
  }
  EXPECT_EQ(graph_entries(graph, origin), expected) << listing.raw;
  EXPECT_EQ(graph_order(graph, origin), expected_order) << listing.raw;
}

class ElfResolver : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-elf-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(*dir));
    // The host view is read once for the suite (it runs `ld.so --help`).
    static const std::optional<SystemView> host = [] {
      auto view = SystemView::host(UseLdLibraryPath::no);
      return view ? std::optional<SystemView>(std::move(*view)) : std::nullopt;
    }();
    ASSERT_TRUE(host);
    m_host = *host;
  }
  fs::path path(const std::string& relative) const { return m_dir->path() / relative; }
  LoadGraph load(const SystemView& view, const fs::path& root,
                 std::optional<fs::path> executable = std::nullopt,
                 std::vector<fs::path> preloaded = {}, PreloadAs as = PreloadAs::dlopen) {
    Resolver resolver(view, nullptr, std::move(executable));
    auto graph = resolver.load(root, preloaded, as);
    EXPECT_TRUE(graph) << graph.error().message;
    return graph ? std::move(*graph) : LoadGraph{};
  }
  static const Resolution* need(const LoadGraph& graph, std::string_view object_name,
                                std::string_view soname) {
    for (const LoadedObject& o : graph.objects) {
      if (o.path.filename() != object_name) continue;
      for (const Resolution& r : o.needs) {
        if (r.soname == soname) return &r;
      }
    }
    return nullptr;
  }

  // a/liba.so needs b/libb.so.1, which needs c/libc_dep.so.1; liba names b/ and c/ in its
  // DT_RPATH or DT_RUNPATH (`tags`): whether libb's need finds c/ through its loader.
  LoadGraph load_chain(Tags tags) {
    build_shared_object(path("c/libc_dep.so.1"), SharedObject("libc_dep.so.1"));
    build_shared_object(path("b/libb.so.1"),
                        SharedObject("libb.so.1").needs(path("c/libc_dep.so.1")));
    build_shared_object(path("a/liba.so"),
                        SharedObject("liba.so")
                            .needs(path("b/libb.so.1"))
                            .with_rpath({path("b").string(), path("c").string()}, tags));
    return load(m_host, path("a/liba.so"));
  }

  std::optional<TempDir> m_dir;
  SystemView m_host;
};

TEST_F(ElfResolver, RpathIsInheritedThroughTheLoaderChain) {
  LoadGraph graph = load_chain(Tags::rpath);
  const Resolution* r = need(graph, "libb.so.1", "libc_dep.so.1");
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->resolved()) << r->error;
  EXPECT_EQ(*r->path, path("c/libc_dep.so.1"));
  EXPECT_EQ(r->step, SearchStep::rpath);
  ASSERT_TRUE(r->via_object);
  EXPECT_EQ(graph.objects[*r->via_object].path, path("a/liba.so"));
  EXPECT_EQ(r->via_entry, path("c").string());
  expect_same_as_loader(graph, loader_list(path("a/liba.so")));
}

TEST_F(ElfResolver, RunpathIsNotInherited) {
  LoadGraph graph = load_chain(Tags::runpath);
  const Resolution* b = need(graph, "liba.so", "libb.so.1");
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->resolved());
  EXPECT_EQ(b->step, SearchStep::runpath);
  const Resolution* r = need(graph, "libb.so.1", "libc_dep.so.1");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->resolved());
  EXPECT_EQ(r->error, "cannot open shared object file: No such file or directory");
  EXPECT_TRUE(r->searched_cache);
  EXPECT_EQ(r->searched, m_host.default_dirs);
  expect_same_as_loader(graph, loader_list(path("a/liba.so")));
}

TEST_F(ElfResolver, OriginIsExpandedWithoutCanonicalising) {
  build_shared_object(path("b/libb.so.1"), SharedObject("libb.so.1"));
  build_shared_object(path("lib/x86_64-linux-gnu/libq.so.1"), SharedObject("libq.so.1"));
  build_shared_object(path("plat/" + m_host.platform + "/libp.so.1"), SharedObject("libp.so.1"));
  build_shared_object(path("a/liba.so"), SharedObject("liba.so")
                                             .needs(path("b/libb.so.1"))
                                             .needs(path("lib/x86_64-linux-gnu/libq.so.1"))
                                             .needs(path("plat/" + m_host.platform + "/libp.so.1"))
                                             .with_rpath({"${ORIGIN}/../b", "$ORIGIN/../$LIB",
                                                          "$ORIGIN/../plat/$PLATFORM"}));
  LoadGraph graph = load(m_host, path("a/liba.so"));
  const Resolution* b = need(graph, "liba.so", "libb.so.1");
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->resolved()) << b->error;
  EXPECT_EQ(b->path->string(), path("a").string() + "/../b/libb.so.1");
  EXPECT_EQ(b->via_entry, "${ORIGIN}/../b");
  const Resolution* p = need(graph, "liba.so", "libp.so.1");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->resolved()) << p->error;
  expect_same_as_loader(graph, loader_list(path("a/liba.so")));
}

TEST_F(ElfResolver, LdLibraryPathComesAfterRpathAndBeforeRunpath) {
  build_shared_object(path("llp/libx.so.1"), SharedObject("libx.so.1"));
  build_shared_object(path("own/libx.so.1"), SharedObject("libx.so.1"));
  build_shared_object(path("a/liba_rpath.so"), SharedObject("liba_rpath.so")
                                                   .needs(path("own/libx.so.1"))
                                                   .with_rpath({path("own").string()}));
  build_shared_object(path("a/liba_runpath.so"),
                      SharedObject("liba_runpath.so")
                          .needs(path("own/libx.so.1"))
                          .with_rpath({path("own").string()}, Tags::runpath));
  SystemView view = m_host;
  view.ld_library_path = {path("llp")};
  const std::string env = "LD_LIBRARY_PATH=" + testing::quote(path("llp").string());

  LoadGraph with_rpath = load(view, path("a/liba_rpath.so"));
  const Resolution* r = need(with_rpath, "liba_rpath.so", "libx.so.1");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->step, SearchStep::rpath);
  EXPECT_EQ(r->path, path("own/libx.so.1"));
  expect_same_as_loader(with_rpath, loader_list(path("a/liba_rpath.so"), env));

  LoadGraph with_runpath = load(view, path("a/liba_runpath.so"));
  r = need(with_runpath, "liba_runpath.so", "libx.so.1");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->step, SearchStep::ld_library_path);
  EXPECT_EQ(r->path, path("llp/libx.so.1"));
  expect_same_as_loader(with_runpath, loader_list(path("a/liba_runpath.so"), env));
}

TEST_F(ElfResolver, OneResolverExpandsLdLibraryPathForEachMainProgram) {
  // Without an executable the root is the main program, so $ORIGIN in LD_LIBRARY_PATH is the
  // root's directory: the resolver keeps the expanded list per main program, not once.
  for (const std::string side : {"x", "y"}) {
    build_shared_object(path(side + "/dep/libdep.so.1"), SharedObject("libdep.so.1"));
    build_shared_object(path(side + "/liba.so"),
                        SharedObject("liba.so").needs(path(side + "/dep/libdep.so.1")));
  }
  SystemView view = m_host;
  view.ld_library_path = {"$ORIGIN/dep"};
  Resolver resolver(view);
  for (const std::string side : {"x", "y", "x"}) {
    auto graph = resolver.load(path(side + "/liba.so"));
    ASSERT_TRUE(graph) << graph.error().message;
    const Resolution* r = need(*graph, "liba.so", "libdep.so.1");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->step, SearchStep::ld_library_path) << side;
    EXPECT_EQ(r->path, path(side + "/dep/libdep.so.1"));
    EXPECT_EQ(r->searched, std::vector<fs::path>{path(side + "/dep")});
    expect_same_as_loader(*graph,
                          loader_list(path(side + "/liba.so"), "LD_LIBRARY_PATH='$ORIGIN/dep'"));
  }
}

TEST_F(ElfResolver, CandidatesOfAnotherClassAreSkipped) {
  // A 32-bit object (no libc needed: the toolchain may lack 32-bit crt files).
  build_shared_object(path("dir32/libw.so.1"), SharedObject("libw.so.1").flags("-m32 -nostdlib"));
  build_shared_object(path("dir64/libw.so.1"), SharedObject("libw.so.1"));
  build_shared_object(path("a/liba.so"),
                      SharedObject("liba.so")
                          .needs(path("dir64/libw.so.1"))
                          .with_rpath({path("dir32").string(), path("dir64").string()}));
  build_shared_object(path("a/liba_only32.so"), SharedObject("liba_only32.so")
                                                    .needs(path("dir64/libw.so.1"))
                                                    .with_rpath({path("dir32").string()}));
  LoadGraph graph = load(m_host, path("a/liba.so"));
  const Resolution* r = need(graph, "liba.so", "libw.so.1");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->path, path("dir64/libw.so.1"));
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_EQ(r->skipped[0], path("dir32/libw.so.1"));
  expect_same_as_loader(graph, loader_list(path("a/liba.so")));

  LoadGraph only32 = load(m_host, path("a/liba_only32.so"));
  r = need(only32, "liba_only32.so", "libw.so.1");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->resolved());
  EXPECT_EQ(r->error, "wrong ELF class: ELFCLASS32");
  expect_same_as_loader(only32, loader_list(path("a/liba_only32.so")));
}

TEST_F(ElfResolver, AlreadyLoadedObjectsMatchBySonameAndByFile) {
  // liba loads libb.so.1 first; libd then asks for it by soname (bound without a search)
  // and by a symlink's name (found by a search, then bound to the same file).
  build_shared_object(path("b/libb.so.1"), SharedObject("libb.so.1"));
  std::error_code ec;
  fs::create_symlink("libb.so.1", path("b/libb_alias.so"), ec);
  ASSERT_FALSE(ec);
  build_shared_object(path("d/libd.so.1"), SharedObject("libd.so.1")
                                               .needs(path("b/libb.so.1"))
                                               .with_rpath({path("b").string()}, Tags::runpath));
  // A second DT_NEEDED naming the same file by another name (a symlink beside it).
  CommandResult patched = testing::run_command("patchelf --add-needed libb_alias.so " +
                                               testing::quote(path("d/libd.so.1").string()));
  ASSERT_EQ(patched.status, 0) << patched.output;
  build_shared_object(path("a/liba.so"), SharedObject("liba.so")
                                             .needs(path("b/libb.so.1"))
                                             .needs(path("d/libd.so.1"))
                                             .with_rpath({path("b").string(), path("d").string()}));
  LoadGraph graph = load(m_host, path("a/liba.so"));
  const Resolution* by_soname = need(graph, "libd.so.1", "libb.so.1");
  ASSERT_NE(by_soname, nullptr);
  EXPECT_EQ(by_soname->step, SearchStep::already_loaded);
  const Resolution* by_file = need(graph, "libd.so.1", "libb_alias.so");
  ASSERT_NE(by_file, nullptr);
  ASSERT_TRUE(by_file->resolved()) << by_file->error;
  EXPECT_EQ(by_file->step, SearchStep::runpath);
  EXPECT_EQ(by_file->path, path("b/libb_alias.so"));
  ASSERT_TRUE(by_file->object);
  EXPECT_EQ(graph.objects[*by_file->object].path, path("b/libb.so.1"));
  expect_same_as_loader(graph, loader_list(path("a/liba.so")));
}

TEST_F(ElfResolver, MissingLibraryReportsEverySearchedDirectory) {
  build_shared_object(path("gone/libgone.so.3"), SharedObject("libgone.so.3"));
  build_shared_object(path("a/liba.so"),
                      SharedObject("liba.so")
                          .needs(path("gone/libgone.so.3"))
                          .with_rpath({"$ORIGIN", "$ORIGIN/../empty", path("a").string()}));
  fs::remove(path("gone/libgone.so.3"));
  LoadGraph graph = load(m_host, path("a/liba.so"));
  const Resolution* r = need(graph, "liba.so", "libgone.so.3");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->resolved());
  std::vector<fs::path> expected = {path("a"), path("a").string() + "/../empty"};
  expected.insert(expected.end(), m_host.default_dirs.begin(), m_host.default_dirs.end());
  EXPECT_EQ(r->searched, expected);
  ASSERT_EQ(graph.unresolved().size(), 1u);
  expect_same_as_loader(graph, loader_list(path("a/liba.so")));
}

TEST_F(ElfResolver, NodeflibSkipsDefaultDirectoriesAndTheirCacheEntries) {
  build_shared_object(path("a/liba.so"), SharedObject("liba.so").flags("-Wl,-z,nodefaultlib"));
  LoadGraph graph = load(m_host, path("a/liba.so"));
  ASSERT_FALSE(graph.objects.empty());
  EXPECT_TRUE(graph.objects[0].info->nodeflib);
  const Resolution* r = need(graph, "liba.so", "libc.so.6");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->resolved());
  expect_same_as_loader(graph, loader_list(path("a/liba.so")));
}

TEST_F(ElfResolver, PreloadedObjectsSatisfyLaterNeeds) {
  build_shared_object(path("p/libp.so.1"), SharedObject("libp.so.1"));
  build_shared_object(path("a/liba.so"), SharedObject("liba.so").needs(path("p/libp.so.1")));
  LoadGraph without = load(m_host, path("a/liba.so"));
  ASSERT_EQ(without.unresolved().size(), 1u);
  LoadGraph graph =
      load(m_host, path("a/liba.so"), std::nullopt, {path("p/libp.so.1")}, PreloadAs::ld_preload);
  EXPECT_TRUE(graph.unresolved().empty());
  const Resolution* r = need(graph, "liba.so", "libp.so.1");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->step, SearchStep::already_loaded);
  expect_same_as_loader(
      graph,
      loader_list(path("a/liba.so"), "LD_PRELOAD=" + testing::quote(path("p/libp.so.1").string())));
}

TEST_F(ElfResolver, ExecutableRpathAppliesToDlopenedRoot) {
  build_shared_object(path("e/libe.so.1"), SharedObject("libe.so.1"));
  build_shared_object(path("a/liba.so"), SharedObject("liba.so").needs(path("e/libe.so.1")));
  const std::string program = path("prog").string();
  CommandResult built = testing::run_command(
      "printf 'int main(void){return 0;}' | cc -x c - -o " + testing::quote(program) +
      " -Wl,--disable-new-dtags -Wl,-rpath," + testing::quote(path("e").string()));
  ASSERT_EQ(built.status, 0) << built.output;
  LoadGraph graph = load(m_host, path("a/liba.so"), fs::path(program));
  EXPECT_EQ(graph.objects[graph.root].path, path("a/liba.so"));
  EXPECT_EQ(graph.objects[graph.root].reason, LoadReason::dlopened);
  const Resolution* r = need(graph, "liba.so", "libe.so.1");
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->resolved()) << r->error;
  EXPECT_EQ(r->step, SearchStep::rpath);
  EXPECT_EQ(r->via_object, graph.main_program);
}

TEST_F(ElfResolver, DlopenUsesTheCallersSearchPath) {
  build_shared_object(path("lib/libcudnn_ops.so.9"), SharedObject("libcudnn_ops.so.9"));
  build_shared_object(path("lib/libcudnn.so.9"),
                      SharedObject("libcudnn.so.9").with_rpath({"$ORIGIN"}));
  LoadGraph graph = load(m_host, path("lib/libcudnn.so.9"));
  Resolver resolver(m_host);
  Resolution r = resolver.resolve_dlopen(graph, graph.root, "libcudnn_ops.so.9");
  ASSERT_TRUE(r.resolved()) << r.error;
  EXPECT_EQ(r.path->string(), path("lib").string() + "/libcudnn_ops.so.9");
  EXPECT_EQ(r.via_entry, "$ORIGIN");
  Resolution missing = resolver.resolve_dlopen(graph, graph.root, "libvenvfix_absent.so.9");
  EXPECT_FALSE(missing.resolved());
  Resolution loaded = resolver.resolve_dlopen(graph, graph.root, "libc.so.6");
  EXPECT_EQ(loaded.step, SearchStep::already_loaded);
}

TEST_F(ElfResolver, AGlibcHwcapsSubdirectoryComesBeforeItsParent) {
  if (m_host.glibc_hwcaps.empty()) GTEST_SKIP() << "ld.so --help lists no glibc-hwcaps here";
  // The same soname in a search directory and in the best glibc-hwcaps subdirectory this CPU
  // supports: ld.so takes the subdirectory's copy.
  const std::string best = "glibc-hwcaps/" + m_host.glibc_hwcaps.front();
  build_shared_object(path("r/libh.so.1"), SharedObject("libh.so.1"));
  build_shared_object(path("r/" + best + "/libh.so.1"), SharedObject("libh.so.1"));
  build_shared_object(path("a/liba.so"), SharedObject("liba.so")
                                             .needs(path("r/libh.so.1"))
                                             .with_rpath({path("r").string()}, Tags::runpath));
  LoadGraph graph = load(m_host, path("a/liba.so"));
  const Resolution* r = need(graph, "liba.so", "libh.so.1");
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->resolved()) << r->error;
  EXPECT_EQ(r->path, path("r/" + best + "/libh.so.1"));
  expect_same_as_loader(graph, loader_list(path("a/liba.so")));
}

TEST_F(ElfResolver, OriginInADtNeededEntryIsTheConsumersDirectory) {
  // A DT_NEEDED with a slash is opened as a path, after $ORIGIN is replaced by the directory
  // of the object that needs it (not the root's).
  build_shared_object(path("a/sub/libn.so.1"), SharedObject("libn.so.1"));
  build_shared_object(path("a/libmid.so"), SharedObject("libmid.so"));
  CommandResult patched = testing::run_command("patchelf --add-needed '$ORIGIN/sub/libn.so.1' " +
                                               testing::quote(path("a/libmid.so").string()));
  ASSERT_EQ(patched.status, 0) << patched.output;
  build_shared_object(path("root/libroot.so"),
                      SharedObject("libroot.so")
                          .needs(path("a/libmid.so"))
                          .with_rpath({path("a").string()}, Tags::runpath));
  LoadGraph graph = load(m_host, path("root/libroot.so"));
  const Resolution* r = need(graph, "libmid.so", "$ORIGIN/sub/libn.so.1");
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->resolved()) << r->error;
  EXPECT_EQ(r->path, path("a/sub/libn.so.1"));
  expect_same_as_loader(graph, loader_list(path("root/libroot.so")), path("a").string());
  // Moved away, the entry is unresolved for the loader too.
  fs::remove(path("a/sub/libn.so.1"));
  LoadGraph missing = load(m_host, path("root/libroot.so"));
  const Resolution* gone = need(missing, "libmid.so", "$ORIGIN/sub/libn.so.1");
  ASSERT_NE(gone, nullptr);
  EXPECT_FALSE(gone->resolved());
  expect_same_as_loader(missing, loader_list(path("root/libroot.so")), path("a").string());
}

TEST_F(ElfResolver, TestCacheAgreesWithTheLoaderInAPrivateMountNamespace) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for unshare -m";
  build_shared_object(path("z/libz_dep.so.1"), SharedObject("libz_dep.so.1"));
  build_shared_object(path("a/liba.so"), SharedObject("liba.so").needs(path("z/libz_dep.so.1")));
  const fs::path conf = path("ld.so.conf");
  const fs::path cache_file = path("ld.so.cache");
  {
    std::FILE* f = std::fopen(conf.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fprintf(f, "%s\n", path("z").c_str());
    std::fclose(f);
  }
  CommandResult built = testing::run_command("ldconfig -X -C " + testing::quote(cache_file) +
                                             " -f " + testing::quote(conf));
  ASSERT_EQ(built.status, 0) << built.output;
  auto cache = LdCache::load(cache_file);
  ASSERT_TRUE(cache) << cache.error().message;
  SystemView view = m_host;
  view.cache = std::move(*cache);
  LoadGraph graph = load(view, path("a/liba.so"));
  const Resolution* r = need(graph, "liba.so", "libz_dep.so.1");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->step, SearchStep::ld_cache);
  EXPECT_EQ(r->path, path("z/libz_dep.so.1"));
  const std::string inner = "mount --bind " + testing::quote(cache_file) +
                            " /etc/ld.so.cache && exec env -i LD_TRACE_LOADED_OBJECTS=1 " +
                            testing::host_interpreter_path() + " " +
                            testing::quote(path("a/liba.so"));
  testing::LoaderListing listing =
      testing::loader_list_command("unshare -m sh -c " + testing::quote(inner));
  expect_same_as_loader(graph, listing);
}

}  // namespace
}  // namespace venvfix::elf
