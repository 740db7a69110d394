// The snapshot manifest's text format (src/txn/manifest.hpp, snapshots/README.md): what is
// written reads back field for field, and every malformed entry line is refused with the file
// and line named. The parser scans each line once; these pin what it must still accept and
// refuse.
#include "txn/manifest.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

namespace venvfix::txn {
namespace {

using ::testing::HasSubstr;
using namespace std::string_literals;

ManifestEntry file_entry(std::string path, std::uint64_t ino) {
  ManifestEntry e;
  e.type = 'F';
  e.mode = 0644;
  e.size = 4096 + ino;
  e.dev = 65024;
  e.ino = ino;
  e.nlink = 2;
  e.mtime_ns = 1796503440914216735 + static_cast<std::int64_t>(ino);
  e.ctime_ns = 1796503441122275522 + static_cast<std::int64_t>(ino);
  e.path = std::move(path);
  return e;
}

ManifestEntry dir_entry(std::string path, bool carried) {
  ManifestEntry e = file_entry(std::move(path), 7);
  e.type = 'D';
  e.mode = 0755;
  e.size = 0;
  e.carried = carried;
  return e;
}

Manifest tree_manifest() {
  Manifest m;
  m.id = "20261205T204341168Z-40530";
  m.kind = SnapshotKind::tree;
  m.created = "2026-12-05T20:43:41Z";
  m.method = "hardlink";
  m.reason = "before pip uninstall %x\nsecond line";
  m.walked_ns = 1796503441000000000;
  return m;
}

std::string header_of(const char* kind) {
  return fmt::format(
      "venvfix-snapshot 3\nid 20261205T204341168Z-40530\nkind {}\ncreated "
      "2026-12-05T20:43:41Z\nmethod hardlink\nentries\n",
      kind);
}

TEST(TxnManifest, WhatIsWrittenReadsBackFieldForField) {
  Manifest m = tree_manifest();
  // A carried directory's entry, a listed directory's entry in between, then the carried
  // directory's again: the parser keeps the previous entry's answer, which must not stick.
  m.entries.push_back(dir_entry("lib", false));
  m.entries.push_back(dir_entry("lib/a", true));
  m.entries.push_back(file_entry("lib/a/one.py", 11));
  m.entries.push_back(dir_entry("lib/b", false));
  m.entries.push_back(file_entry("lib/b/two.py", 12));
  m.entries.push_back(file_entry("lib/a/three.py", 13));
  m.entries.push_back(file_entry("lib/odd %name\twith\ttabs\nand\rnewlines", 14));
  m.entries.push_back(file_entry("lib/-1", 15));
  m.entries.back().mtime_ns = -5;  // before 1970: negative, still a number
  ManifestEntry link = file_entry("lib/link", 16);
  link.type = 'S';
  link.mode = 0777;
  link.target = "../target with\ttab and %";
  link.size = link.target.size();
  m.entries.push_back(link);

  const std::string text = manifest_text(m);
  Result<Manifest> back = parse_manifest(text, "the manifest");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->reason, m.reason);
  EXPECT_EQ(back->walked_ns, m.walked_ns);
  ASSERT_EQ(back->entries.size(), m.entries.size());
  for (std::size_t i = 0; i < m.entries.size(); ++i) {
    const ManifestEntry& want = m.entries[i];
    const ManifestEntry& got = back->entries[i];
    SCOPED_TRACE(want.path);
    EXPECT_EQ(got.type, want.type);
    EXPECT_EQ(got.mode, want.mode);
    EXPECT_EQ(got.size, want.size);
    EXPECT_EQ(got.dev, want.dev);
    EXPECT_EQ(got.ino, want.ino);
    EXPECT_EQ(got.nlink, want.nlink);
    EXPECT_EQ(got.mtime_ns, want.mtime_ns);
    EXPECT_EQ(got.ctime_ns, want.ctime_ns);
    EXPECT_EQ(got.path, want.path);
    EXPECT_EQ(got.target, want.target);
  }
  // Carried: the `d` directory and the entries directly in it, not those of its subdirectory.
  std::vector<bool> carried;
  for (const ManifestEntry& e : back->entries) carried.push_back(e.carried);
  EXPECT_EQ(carried,
            (std::vector<bool>{false, true, true, false, false, true, false, false, false}));
  EXPECT_EQ(manifest_text(*back), text);
}

TEST(TxnManifest, EveryMalformedEntryLineIsRefusedNamingItsLine) {
  const std::string tree = header_of("tree");
  const std::string ok_line = "F 644 10 1 2 1 3 4 lib/a.py\n";
  ASSERT_TRUE(parse_manifest(tree + ok_line, "m")) << "the well-formed line must read";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"F 644 10 1 2 1 3 4\n", "too few fields"},
      {"F 644 10 1\n", "too few fields"},
      {"F\n", "too few fields"},
      {"Q 644 10 1 2 1 3 4 lib/a.py\n", "unknown entry type"},
      {"FF 644 10 1 2 1 3 4 lib/a.py\n", "unknown entry type"},
      {"F 648 10 1 2 1 3 4 lib/a.py\n", "bad number"},   // not octal
      {"F 644 10x 1 2 1 3 4 lib/a.py\n", "bad number"},  // trailing garbage
      {"F 644 -10 1 2 1 3 4 lib/a.py\n", "bad number"},  // a size is not negative
      {"F 644 +10 1 2 1 3 4 lib/a.py\n", "bad number"},
      {"F 644  10 1 2 1 3 4 lib/a.py\n", "bad number"},                   // an empty field
      {"F 644 99999999999999999999 1 2 1 3 4 lib/a.py\n", "bad number"},  // overflow
      {"F 644 10 1 2 1 3 4 ../etc/passwd\n", "leaves the venv"},
      {"F 644 10 1 2 1 3 4 /etc/passwd\n", "leaves the venv"},
      {"F 644 10 1 2 1 3 4 lib/../../x\n", "leaves the venv"},
      {"F 644 10 1 2 1 3 4 lib//x\n", "leaves the venv"},
      {"F 644 10 1 2 1 3 4 lib/./x\n", "leaves the venv"},
      {"F 644 10 1 2 1 3 4 lib/\n", "leaves the venv"},
      {"F 644 10 1 2 1 3 4 .venvfix/store/x\n", "leaves the venv"},
      {"F 644 10 1 2 1 3 4 lib/a\0b\n"s, "leaves the venv"},
      {"F 644 10 1 2 1 3 4 lib/%zz\n", "bad escape"},
      {"S 777 3 1 2 1 3 4 lib/link\n", "symlink entry without a target"},
  };
  for (const auto& [line, why] : cases) {
    SCOPED_TRACE(line);
    std::string text = tree;
    text += ok_line;
    text += line;
    Result<Manifest> parsed = parse_manifest(text, "the manifest");
    ASSERT_FALSE(parsed);
    EXPECT_THAT(parsed.error().message, HasSubstr("the manifest, line 8: "));
    EXPECT_THAT(parsed.error().message, HasSubstr(why));
  }
  // `d` is a tree snapshot's word only.
  Result<Manifest> transaction =
      parse_manifest(header_of("transaction") + "d 755 0 1 2 1 3 4 lib\n", "t");
  ASSERT_FALSE(transaction);
  EXPECT_THAT(transaction.error().message, HasSubstr("t, line 7: unknown entry type"));
}

}  // namespace
}  // namespace venvfix::txn
