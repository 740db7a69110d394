// The snapshot manifest's text format (src/txn/manifest.hpp, snapshots/README.md): what is
// written reads back field for field, and every malformed entry line is refused with the file
// and line named. The parser scans each line once; these pin what it must still accept and
// refuse.
#include "txn/manifest.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <limits>
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

// A directory inside a carried-over (`d`) directory was entered by the walk and recorded afresh:
// it is not carried, its files are not, and written back it stays a `D` line (the text is a fixed
// point of reading and writing).
TEST(TxnManifest, ADirectoryInACarriedDirectoryIsNotCarriedAndWritesBackAsItWasRead) {
  const std::string text = header_of("tree") +
                           "d 755 0 1 2 3 4 5 lib\n"
                           "D 755 0 1 3 3 4 5 lib/sub\n"
                           "F 644 10 1 4 1 4 5 lib/sub/inner.py\n"
                           "F 644 10 1 5 1 4 5 lib/outer.py\n"
                           "S 777 3 1 6 1 4 5 lib/link\t../x\n";
  Result<Manifest> parsed = parse_manifest(text, "m");
  ASSERT_TRUE(parsed) << parsed.error().message;
  std::vector<bool> carried;
  for (const ManifestEntry& e : parsed->entries) carried.push_back(e.carried);
  EXPECT_EQ(carried, (std::vector<bool>{true, false, false, true, true}));
  const std::string written = manifest_text(*parsed);
  EXPECT_EQ(written.substr(written.find("entries\n")), text.substr(text.find("entries\n")));
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

// Numbers of up to 19 digits are summed without from_chars (the manifest's nanosecond times are
// 19 digits): the edges of each field's type read as from_chars reads them, one past is refused.
TEST(TxnManifest, NumbersAtTheEdgesOfTheirTypesReadExactly) {
  const std::string tree = header_of("tree");
  const std::vector<std::pair<std::string, std::string>> good = {
      {"F 644 9999999999999999999 1 2 1 3 4 lib/a.py\n", "9999999999999999999"},
      {"F 644 18446744073709551615 1 2 1 3 4 lib/a.py\n", "18446744073709551615"},
      {"F 644 0000000000000000000000010 1 2 1 3 4 lib/a.py\n", "10"},
  };
  for (const auto& [line, size] : good) {
    SCOPED_TRACE(line);
    Result<Manifest> parsed = parse_manifest(tree + line, "m");
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(std::to_string(parsed->entries.at(0).size), size);
  }
  // The header's counts are written from 64-bit unsigned sums, and read back whole.
  Result<Manifest> counts = parse_manifest(
      "venvfix-snapshot 3\nid a\nkind tree\ncreated c\nmethod hardlink\nfiles "
      "18446744073709551615\nbytes 9223372036854775808\nentries\n",
      "m");
  ASSERT_TRUE(counts) << counts.error().message;
  EXPECT_EQ(counts->header_files, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(counts->header_bytes, std::uint64_t{1} << 63);
  Result<Manifest> times = parse_manifest(
      tree + "F 644 1 1 2 1 9223372036854775807 -9223372036854775808 lib/a.py\n", "m");
  ASSERT_TRUE(times) << times.error().message;
  EXPECT_EQ(times->entries.at(0).mtime_ns, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(times->entries.at(0).ctime_ns, std::numeric_limits<std::int64_t>::min());
  for (const std::string line : {
           "F 644 18446744073709551616 1 2 1 3 4 lib/a.py\n",  // size: 2^64
           "F 644 1 1 2 1 9223372036854775808 4 lib/a.py\n",   // mtime: 2^63
           "F 644 1 1 2 1 9999999999999999999 4 lib/a.py\n",   // 19 digits over 2^63
           "F 644 1 1 2 1 3 -9223372036854775809 lib/a.py\n",  // ctime: below -2^63
           "F 644 1 1 2 1 3 99999999999999999999 lib/a.py\n",  // 20 digits
           "F 40000000000 1 1 2 1 3 4 lib/a.py\n",             // mode: 2^32
       }) {
    SCOPED_TRACE(line);
    Result<Manifest> parsed = parse_manifest(tree + line, "m");
    ASSERT_FALSE(parsed);
    EXPECT_THAT(parsed.error().message, HasSubstr("m, line 7: bad number"));
  }
}

// A manifest over 1 MiB of entries is read in two halves on two threads: the same entries, the
// same carried marks across the split, and a bad line named by its line in the file, the
// earlier one where both halves have one.
TEST(TxnManifest, ALargeManifestReadsTheSameInTwoHalves) {
  Manifest m = tree_manifest();
  for (std::uint64_t d = 0; d < 400; ++d) {
    const std::string dir = fmt::format("lib/python3.12/site-packages/pkg{}", d);
    m.entries.push_back(dir_entry(dir, d % 2 == 0));  // every other one carried over
    for (std::uint64_t f = 0; f < 30; ++f) {
      m.entries.push_back(file_entry(fmt::format("{}/module_number_{}.py", dir, f), d * 100 + f));
    }
  }
  // Written after its parent's subtree, as a walk writes a directory's later entries: its
  // parent's `d` line is in the first half, it is in the second.
  m.entries.push_back(file_entry("lib/python3.12/site-packages/pkg0/late.py", 99999));
  const std::string text = manifest_text(m);
  ASSERT_GT(text.size(), std::size_t{1} << 20) << "too small to be read in two halves";
  Result<Manifest> back = parse_manifest(text, "m");
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->entries.size(), m.entries.size());
  for (std::size_t i = 0; i < m.entries.size(); ++i) {
    ASSERT_EQ(back->entries[i].path, m.entries[i].path) << i;
    ASSERT_EQ(back->entries[i].ino, m.entries[i].ino) << i;
    // Every file is in a pkgN directory, and the even ones were written `d`.
    const std::string& path = m.entries[i].path;
    const std::size_t number_at = path.find("/pkg") + 4;
    const bool in_carried_dir =
        m.entries[i].type == 'F' &&
        std::stoul(path.substr(number_at)) % 2 == 0;  // stoul stops at the '/'
    ASSERT_EQ(back->entries[i].carried, m.entries[i].carried || in_carried_dir) << i;
  }
  EXPECT_TRUE(back->entries.back().carried) << "pkg0/late.py: its parent was written `d`";
  EXPECT_EQ(manifest_text(*back), text);

  // Bad lines: one near the end (second half), then one near the start too (first half wins).
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = text.find('\n', at);
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  auto joined = [](const std::vector<std::string>& all) {
    std::string out;
    for (const std::string& line : all) out += line + "\n";
    return out;
  };
  const std::size_t late = lines.size() - 5;
  const std::size_t early = 20;
  lines[late] = "F 644 10x 1 2 1 3 4 lib/a.py";
  Result<Manifest> second_half = parse_manifest(joined(lines), "m");
  ASSERT_FALSE(second_half);
  EXPECT_THAT(second_half.error().message,
              HasSubstr(fmt::format("m, line {}: bad number", late + 1)));
  lines[early] = "F 644 10 1 2 1 3 4 ../escape";
  Result<Manifest> both = parse_manifest(joined(lines), "m");
  ASSERT_FALSE(both);
  EXPECT_THAT(both.error().message, HasSubstr(fmt::format("m, line {}: path", early + 1)));
}

// What `snapshot delete` and `prune` read of every kept manifest: the F entries' identities only,
// the same that parsing the whole manifest gives (odd paths, a negative mtime, symlinks and
// directories between them), and none from a manifest whose entries the store does not hold.
TEST(TxnManifest, TheStoredIdentitiesAreThoseOfTheParsedFileEntries) {
  Manifest m = tree_manifest();
  m.entries.push_back(dir_entry("lib", true));
  m.entries.push_back(file_entry("lib/one.py", 11));
  m.entries.push_back(file_entry("lib/odd %name\twith\ttabs\nand\rnewlines", 12));
  m.entries.push_back(file_entry("lib/-1", 13));
  m.entries.back().mtime_ns = -5;
  m.entries.back().mode = 04755;
  ManifestEntry link = file_entry("lib/link", 14);
  link.type = 'S';
  link.target = "one.py";
  m.entries.push_back(link);
  const std::string text = manifest_text(m);
  auto parsed = parse_manifest(text, "the manifest");
  ASSERT_TRUE(parsed) << parsed.error().message;
  std::vector<FileIdentity> want;
  for (const ManifestEntry& e : parsed->entries) {
    if (e.type != 'F') continue;
    want.push_back(FileIdentity{e.dev, e.ino, e.size, e.mtime_ns, 0, e.mode});
  }
  ASSERT_EQ(want.size(), 3u);
  std::vector<FileIdentity> got;
  ASSERT_TRUE(visit_stored_identities(text, "the manifest",
                                      [&](const FileIdentity& id) { got.push_back(id); }));
  EXPECT_EQ(got, want);
  for (const char* kind : {"transaction", "tree"}) {
    Manifest other = m;
    other.kind = kind == "tree"s ? SnapshotKind::tree : SnapshotKind::transaction;
    other.format = kind == "tree"s ? 1 : 3;  // a version 1 tree: held under files/, not the store
    other.entries = {file_entry("lib/one.py", 11)};
    std::size_t visited = 0;
    ASSERT_TRUE(visit_stored_identities(manifest_text(other), "the manifest",
                                        [&](const FileIdentity&) { ++visited; }));
    EXPECT_EQ(visited, 0u) << kind;
  }
  auto bad = visit_stored_identities(header_of("tree") + "D 755 0 0 0 0 0 0 lib\nF 644 1 2\n",
                                     "the manifest", [](const FileIdentity&) {});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "the manifest, line 8: bad file entry");
  EXPECT_FALSE(visit_stored_identities("venvfix-snapshot 3\nkind tree\n", "the manifest",
                                       [](const FileIdentity&) {}));
}

}  // namespace
}  // namespace venvfix::txn
