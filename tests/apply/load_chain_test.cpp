// Which library of the load check loads in the process of another: the rule on closures, and
// the real loader's --list read into one.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "apply/load_chain.hpp"
#include "support/paths.hpp"
#include "txn/apply_test_support.hpp"

namespace venvfix::apply::detail {
namespace {

using venvfix::txn::testing::compile_shared;

InodeKey id(std::uint64_t n) {
  return {1, n};
}

TEST(LoadChain, AFileIsBasedOnTheLargestListedClosureInsideItsOwn) {
  // 0 = libc-like (1), 1 = Lt (2: needs 1), 2 = cublas (3: needs 2, 1), 3 = nvblas (needs 3, 2,
  // 1), 4 = unrelated (5: needs 1).
  std::vector<std::optional<InodeKey>> ids = {id(1), id(2), id(3), id(4), id(5)};
  std::vector<Closure> closures = {std::set<InodeKey>{}, std::set{id(1)}, std::set{id(1), id(2)},
                                   std::set{id(1), id(2), id(3)}, std::set{id(1)}};
  std::vector<std::size_t> bases = chain_bases(ids, closures);
  EXPECT_EQ(bases, (std::vector<std::size_t>{k_own_process, 0, 1, 2, 0}));
}

TEST(LoadChain, NoBaseWhereTheFileWouldLoadSomethingItsOwnSearchDoesNot) {
  // 1 needs 0, whose closure holds 9, which 1's own search does not load: 1 stays on its own.
  std::vector<std::optional<InodeKey>> ids = {id(1), id(2)};
  std::vector<Closure> closures = {std::set{id(9)}, std::set{id(1), id(8)}};
  EXPECT_EQ(chain_bases(ids, closures), (std::vector<std::size_t>{k_own_process, k_own_process}));
  // Unknown closures or identities chain nothing.
  closures = {std::set<InodeKey>{}, std::nullopt};
  EXPECT_EQ(chain_bases(ids, closures), (std::vector<std::size_t>{k_own_process, k_own_process}));
  ids = {std::nullopt, id(2)};
  closures = {std::set<InodeKey>{}, std::set{id(1)}};
  EXPECT_EQ(chain_bases(ids, closures), (std::vector<std::size_t>{k_own_process, k_own_process}));
}

TEST(LoadChain, FilesThatNeedEachOtherFormNoCycle) {
  std::vector<std::optional<InodeKey>> ids = {id(1), id(2)};
  std::vector<Closure> closures = {std::set{id(2)}, std::set{id(1)}};
  EXPECT_EQ(chain_bases(ids, closures), (std::vector<std::size_t>{k_own_process, k_own_process}));
}

TEST(LoadChain, TheRealLoaderListsTheClosure) {
  const fs::path loader = running_loader();
  ASSERT_FALSE(loader.empty());
  auto dir = TempDir::create("venvfix-load-chain-test-");
  ASSERT_TRUE(dir);
  const fs::path base = dir->path() / "base/libbase.so.1";
  const fs::path top = dir->path() / "top/libtop.so.1";
  compile_shared(base, "libbase.so.1", "int base_fn(void) { return 1; }\n");
  compile_shared(top, "libtop.so.1", "int base_fn(void);\nint top_fn(void) { return base_fn(); }\n",
                 {base}, "-Wl,-rpath," + base.parent_path().string());
  struct stat st {};
  ASSERT_EQ(::stat(base.c_str(), &st), 0);
  Closure closure = loader_closure(loader, top.string());
  ASSERT_TRUE(closure);
  EXPECT_TRUE(closure->contains(InodeKey{st.st_dev, st.st_ino}));
  ASSERT_EQ(::stat(top.c_str(), &st), 0);
  EXPECT_FALSE(closure->contains(InodeKey{st.st_dev, st.st_ino})) << "the file itself";
  // A dependency the loader cannot find: no closure.
  fs::remove(base);
  EXPECT_FALSE(loader_closure(loader, top.string()));
}

}  // namespace
}  // namespace venvfix::apply::detail
