// The unpacked-wheel cache: an install from the cache stages exactly what an install from the
// archive stages (files, modes, RECORD), scripts get each install's own interpreter, and an
// entry that was changed or does not match the wheel is never used.
#include "venvfix/wheel/unpacked_cache.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "support/recording_write_steps.hpp"
#include "txn/apply_test_support.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/wheel/wheel.hpp"
#include "wheel/wheel_test_support.hpp"

namespace venvfix::wheel {
namespace {

using testing::Staged;

using RecordingSteps = venvfix::testing::RecordingWriteSteps;

class WheelUnpackedCache : public testing::StagingTest {
 protected:
  void SetUp() override {
    testing::StagingTest::SetUp();
    m_wheel = testing::test_wheels() / "demo_pkg-1.0-py3-none-any.whl";
    auto digest = sha256_file(m_wheel);
    ASSERT_TRUE(digest);
    m_sha = to_hex(*digest);
  }

  Result<Staged> stage(InstallOptions options) {
    options.umask = 022;
    return testing::StagingTest::stage(m_wheel, options);
  }

  static void expect_same(const Staged& a, const Staged& b) {
    EXPECT_TRUE(a.tree == b.tree);
    EXPECT_EQ(a.result.record_text, b.result.record_text);
    ASSERT_EQ(a.result.files.size(), b.result.files.size());
    for (std::size_t i = 0; i < a.result.files.size(); ++i) {
      EXPECT_EQ(a.result.files[i].path, b.result.files[i].path);
      EXPECT_EQ(a.result.files[i].mode, b.result.files[i].mode) << a.result.files[i].path;
      EXPECT_EQ(a.result.files[i].sha256, b.result.files[i].sha256) << a.result.files[i].path;
    }
  }

  // Installs once with the cache filling, returns that staging and the entry found after.
  std::pair<Staged, std::optional<UnpackedWheel>> fill(const UnpackedCache& cache) {
    InstallOptions keep;
    keep.keep_unpacked = &cache;
    keep.wheel_sha256_hex = m_sha;
    auto first = stage(keep);
    EXPECT_TRUE(first) << first.error().message;
    return {std::move(*first), cache.find(m_sha)};
  }

  fs::path m_wheel;
  std::string m_sha;
};

TEST_F(WheelUnpackedCache, InstallFromTheCacheStagesWhatTheArchiveStages) {
  UnpackedCache cache(m_dir->path() / "cache");
  auto [first, entry] = fill(cache);
  ASSERT_TRUE(entry);
  EXPECT_TRUE(fs::exists(entry->wheel_file()));
  // Every installed member, the data, header and script members included.
  EXPECT_TRUE(entry->members.count("demo_pkg/__init__.py"));
  EXPECT_TRUE(entry->members.count("demo_pkg-1.0.data/headers/demo.h"));
  EXPECT_FALSE(entry->members.count("demo_pkg-1.0.dist-info/RECORD"));

  InstallOptions from;
  from.from_unpacked = &*entry;
  auto second = stage(from);
  ASSERT_TRUE(second) << second.error().message;
  expect_same(first, *second);
  auto plain = stage(InstallOptions{});
  ASSERT_TRUE(plain);
  expect_same(*plain, *second);
}

TEST_F(WheelUnpackedCache, LinkModesShareInodesOnlyWhenAskedAndNeverAcrossModes) {
  UnpackedCache cache(m_dir->path() / "cache");
  auto [first, entry] = fill(cache);
  ASSERT_TRUE(entry);
  fs::path member = entry->member_path("demo_pkg/__init__.py");
  fs::path site = m_venv.purelib.lexically_relative(m_venv.root);
  auto staged_file = [&](int index) {
    return m_dir->path() / ("staging-" + std::to_string(index)) / site / "demo_pkg/__init__.py";
  };
  InstallOptions from;
  from.from_unpacked = &*entry;
  ASSERT_TRUE(stage(from));  // staging-1: hard links
  EXPECT_TRUE(fs::equivalent(staged_file(1), member));
  from.link_mode = LinkMode::copy;
  auto copied = stage(from);  // staging-2: copies
  ASSERT_TRUE(copied);
  EXPECT_FALSE(fs::equivalent(staged_file(2), member));
  expect_same(first, *copied);
  // Another umask means other modes: the shared inode is never chmod'ed, the file is copied.
  from.link_mode = LinkMode::hardlink;
  fs::path staging = m_dir->path() / "staging-other-umask";
  fs::create_directories(staging);
  InstallOptions other = from;
  other.umask = 077;
  auto result = install_wheel(m_wheel, m_venv, staging, other);
  ASSERT_TRUE(result) << result.error().message;
  fs::path file = staging / site / "demo_pkg/__init__.py";
  EXPECT_FALSE(fs::equivalent(file, member));
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::status(member).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::others_read);
}

TEST_F(WheelUnpackedCache, ScriptsAreRewrittenForEachInstallNotInTheCache) {
  UnpackedCache cache(m_dir->path() / "cache");
  auto [first, entry] = fill(cache);
  ASSERT_TRUE(entry);
  auto kept = read_file(entry->member_path("demo_pkg-1.0.data/scripts/demo-script"));
  ASSERT_TRUE(kept);
  EXPECT_EQ(*kept, "#!python -u\nprint('hello')\n");  // pristine, not the first install's

  InstallOptions from;
  from.from_unpacked = &*entry;
  from.python_executable = "/opt/other/python";
  auto second = stage(from);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->tree.at("bin/demo-script").content, "#!/opt/other/python\nprint('hello')\n");
  EXPECT_EQ(second->tree.at("bin/demo-script").mode, 0755u);
}

TEST_F(WheelUnpackedCache, AnEntryChangedInPlaceIsRemovedAndNeverUsed) {
  UnpackedCache cache(m_dir->path() / "cache");
  auto [first, entry] = fill(cache);
  ASSERT_TRUE(entry);
  // A write through a hard link the venv shares with the entry (same size, new bytes).
  fs::path member = entry->member_path("demo_pkg/__init__.py");
  {
    std::fstream out(member, std::ios::in | std::ios::out | std::ios::binary);
    out.seekp(0);
    out.put('#');
  }
  EXPECT_FALSE(cache.find(m_sha));
  EXPECT_FALSE(fs::exists(entry->dir));
  // The next install reads the archive again and keeps a fresh entry.
  auto [again, fresh] = fill(cache);
  expect_same(first, again);
  ASSERT_TRUE(fresh);
}

TEST_F(WheelUnpackedCache, AnEntryThatDisagreesWithTheWheelFallsBackToTheArchive) {
  UnpackedCache cache(m_dir->path() / "cache");
  auto [first, entry] = fill(cache);
  ASSERT_TRUE(entry);
  UnpackedWheel lacking = *entry;
  lacking.members.erase("demo_pkg/cli.py");
  UnpackedWheel wrong = *entry;
  wrong.members.at("demo_pkg/cli.py").sha256[0] ^= 1;
  for (const UnpackedWheel* bad : {&lacking, &wrong}) {
    InstallOptions from;
    from.from_unpacked = bad;
    auto staged = stage(from);
    ASSERT_TRUE(staged) << staged.error().message;
    expect_same(first, *staged);
  }
}

TEST_F(WheelUnpackedCache, DamagedIndexesAndForeignNamesAreNotEntries) {
  UnpackedCache cache(m_dir->path() / "cache");
  EXPECT_FALSE(cache.find("not-a-hash"));
  EXPECT_FALSE(cache.find("../" + m_sha.substr(3)));
  EXPECT_FALSE(cache.find(m_sha));  // nothing there yet
  auto [first, entry] = fill(cache);
  ASSERT_TRUE(entry);
  ASSERT_TRUE(write_file_atomic(entry->dir / "index", "venvfix-unpacked/1 1 2\nbad\n"));
  EXPECT_FALSE(cache.find(m_sha));
  EXPECT_FALSE(fs::exists(entry->dir));
}

TEST_F(WheelUnpackedCache, AnEntrysFilesReachTheDiskBeforeItsIndexIsWritten) {
  RecordingSteps steps;
  UnpackedCache cache(m_dir->path() / "cache", steps);
  auto [first, entry] = fill(cache);
  ASSERT_TRUE(entry);
  const std::vector<std::string>& calls = steps.calls();
  auto index_write = std::find_if(calls.begin(), calls.end(), [](const std::string& call) {
    return call.starts_with("write ") && call.find("/index.tmp-") != std::string::npos;
  });
  ASSERT_NE(index_write, calls.end());
  // Every file of the entry had its data synced, and each before the index was written.
  std::set<std::string> expected;
  for (const auto& [name, member] : entry->members) expected.insert("m/" + name);
  expected.insert("wheel.whl");
  std::set<std::string> synced_files;
  for (auto call = calls.begin(); call != index_write; ++call) {
    if (!call->starts_with("sync_data ")) continue;
    std::string inside = call->substr(call->find("/entry.") + 1);  // entry.XXXXXX/<file>
    synced_files.insert(inside.substr(inside.find('/') + 1));
  }
  EXPECT_EQ(synced_files, expected);
  EXPECT_EQ(std::count_if(index_write, calls.end(),
                          [](const std::string& call) { return call.starts_with("sync_data "); }),
            0);
}

TEST_F(WheelUnpackedCache, AnEntryOfManyFilesIsMadeDurableWithOneSyncOfItsFilesystem) {
  // 70 modules and the dist-info: more files than an fdatasync each is worth.
  const fs::path source = m_dir->path() / "many-src";
  for (int i = 0; i < 70; ++i) {
    txn::testing::write_text(source / "many_pkg" / fmt::format("mod_{}.py", i),
                             fmt::format("VALUE = {}\n", i));
  }
  auto made = txn::testing::make_wheel(m_dir->path() / "wheels", "many_pkg", "1.0", source);
  RecordingSteps steps;
  UnpackedCache cache(m_dir->path() / "cache", steps);
  InstallOptions keep;
  keep.keep_unpacked = &cache;
  keep.wheel_sha256_hex = made.sha256;
  keep.umask = 022;
  auto staged = testing::StagingTest::stage(made.path, keep);
  ASSERT_TRUE(staged) << staged.error().message;
  auto entry = cache.find(made.sha256);
  ASSERT_TRUE(entry);
  EXPECT_GT(entry->members.size(), 70u);
  const std::vector<std::string>& calls = steps.calls();
  auto index_write = std::find_if(calls.begin(), calls.end(), [](const std::string& call) {
    return call.starts_with("write ") && call.find("/index.tmp-") != std::string::npos;
  });
  ASSERT_NE(index_write, calls.end());
  auto is = [](std::string_view op) {
    return [op](const std::string& call) { return call.starts_with(op); };
  };
  EXPECT_EQ(std::count_if(calls.begin(), index_write, is("sync_filesystem ")), 1);
  EXPECT_EQ(std::count_if(calls.begin(), calls.end(), is("sync_filesystem ")), 1);
  EXPECT_EQ(std::count_if(calls.begin(), calls.end(), is("sync_data ")), 0);
}

TEST_F(WheelUnpackedCache, AnEntryWhoseDataCannotReachTheDiskIsNotKept) {
  RecordingSteps steps("sync_data");
  UnpackedCache cache(m_dir->path() / "cache", steps);
  auto [first, entry] = fill(cache);  // the install itself succeeds (fill checks it)
  EXPECT_FALSE(entry);
  EXPECT_FALSE(fs::exists(m_dir->path() / "cache" / m_sha));
  EXPECT_TRUE(fs::is_empty(m_dir->path() / "cache" / "tmp"));
  EXPECT_FALSE(std::any_of(steps.calls().begin(), steps.calls().end(), [](const std::string& c) {
    return c.find("/index") != std::string::npos;
  }));
}

}  // namespace
}  // namespace venvfix::wheel
