#include "venvfix/dist/path_table.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace venvfix::dist {
namespace {

TEST(DistPathTable, InternsEachPathOnceInFirstSeenOrder) {
  PathTable table;
  EXPECT_EQ(table.intern("/v/site/a.py"), 0u);
  EXPECT_EQ(table.intern("/v/site/b.py"), 1u);
  EXPECT_EQ(table.intern("/v/site/a.py"), 0u);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table[1], "/v/site/b.py");
  EXPECT_EQ(table.find("/v/site/b.py"), 1u);
  EXPECT_FALSE(table.find("/v/site/c.py"));
  EXPECT_FALSE(table.find("/v/site/a.p"));
  EXPECT_FALSE(PathTable().find("/x"));
}

TEST(DistPathTable, CStringsAreTerminatedAndEmptyPathsAllowed) {
  PathTable table;
  PathTable::Id empty = table.intern("").value();
  PathTable::Id path = table.intern("/lib/libx.so.1").value();
  EXPECT_EQ(table[empty], "");
  EXPECT_STREQ(table.c_str(empty), "");
  EXPECT_STREQ(table.c_str(path), "/lib/libx.so.1");
  EXPECT_EQ(std::strlen(table.c_str(path)), table[path].size());
}

TEST(DistPathTable, KeepsEveryPathThroughManyRehashes) {
  PathTable table;
  table.reserve(10, 100);  // far too small: interning must grow past it
  for (int i = 0; i < 50'000; ++i) {
    ASSERT_EQ(table.intern("/site/pkg/" + std::to_string(i) + ".py"), static_cast<unsigned>(i));
  }
  for (int i = 0; i < 50'000; i += 7) {
    std::string path = "/site/pkg/" + std::to_string(i) + ".py";
    ASSERT_EQ(table.find(path), static_cast<unsigned>(i));
    ASSERT_EQ(table[static_cast<PathTable::Id>(i)], path);
  }
  EXPECT_EQ(table.size(), 50'000u);
}

}  // namespace
}  // namespace venvfix::dist
