// The resolver against the real dynamic loader: every scenario builds real shared objects with
// the system compiler and compares venvfix's answer with `ld.so --list`.
#include "venvfix/elf/resolver.hpp"

#include <gtest/gtest.h>

#include <map>

#include "elf/elf_test_support.hpp"

namespace venvfix::elf {
namespace {

using testing::build_shared_object;
using testing::loader_list;
using testing::SharedObject;
using testing::Tags;

std::map<std::string, std::string> graph_entries(const LoadGraph& graph) {
  std::map<std::string, std::string> entries;
  for (std::size_t i = 0; i < graph.objects.size(); ++i) {
    const LoadedObject& o = graph.objects[i];
    if (o.reason != LoadReason::main_program && o.reason != LoadReason::interpreter) {
      entries[o.names.empty() ? o.path.string() : o.names.front()] = o.path.string();
    }
    for (const Resolution& need : o.needs) {
      if (!need.resolved()) entries[need.soname] = "";
    }
  }
  return entries;
}

std::vector<std::string> graph_order(const LoadGraph& graph) {
  std::vector<std::string> order;
  for (const LoadedObject& o : graph.objects) {
    if (o.reason != LoadReason::main_program && o.reason != LoadReason::interpreter) {
      order.push_back(o.path.string());
    }
  }
  return order;
}

// Asserts that venvfix and ld.so agree on every name -> path and on the load order.
void expect_same_as_loader(const LoadGraph& graph, const testing::LoaderListing& listing) {
  std::map<std::string, std::string> expected;
  std::vector<std::string> expected_order;
  for (const auto& [name, path] : listing.entries) {
    expected[name] = path;
    if (!path.empty()) expected_order.push_back(path);
  }
  EXPECT_EQ(graph_entries(graph), expected) << listing.raw;
  EXPECT_EQ(graph_order(graph), expected_order) << listing.raw;
}

class ElfResolver : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-elf-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(*dir));
    auto host = SystemView::host(UseLdLibraryPath::no);
    ASSERT_TRUE(host) << host.error().message;
    m_host = std::move(*host);
  }
  fs::path path(const std::string& relative) const { return m_dir->path() / relative; }
  LoadGraph load(const SystemView& view, const fs::path& root,
                 std::optional<fs::path> executable = std::nullopt) {
    Resolver resolver(view, nullptr, std::move(executable));
    auto graph = resolver.load(root);
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

  std::optional<TempDir> m_dir;
  SystemView m_host;
};

TEST_F(ElfResolver, RpathIsInheritedThroughTheLoaderChain) {
  build_shared_object(path("c/libc_dep.so.1"), SharedObject("libc_dep.so.1"));
  build_shared_object(path("b/libb.so.1"),
                      SharedObject("libb.so.1").needs(path("c/libc_dep.so.1")));
  build_shared_object(path("a/liba.so"),
                      SharedObject("liba.so")
                          .needs(path("b/libb.so.1"))
                          .with_rpath({path("b").string(), path("c").string()}, Tags::rpath));
  LoadGraph graph = load(m_host, path("a/liba.so"));
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
  build_shared_object(path("c/libc_dep.so.1"), SharedObject("libc_dep.so.1"));
  build_shared_object(path("b/libb.so.1"),
                      SharedObject("libb.so.1").needs(path("c/libc_dep.so.1")));
  build_shared_object(path("a/liba.so"),
                      SharedObject("liba.so")
                          .needs(path("b/libb.so.1"))
                          .with_rpath({path("b").string(), path("c").string()}, Tags::runpath));
  LoadGraph graph = load(m_host, path("a/liba.so"));
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

}  // namespace
}  // namespace venvfix::elf
