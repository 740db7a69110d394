// `venvfix apply` onto a disk that refuses the writes (support/failing_disk.hpp), end to end:
// the venv and the cache on that disk. Each write venvfix makes succeeds into the page cache and
// fails only when it is synced, as on a failing disk. The apply must notice before the
// transaction changes anything, say which file, and leave the venv as it was: on the disk, read
// after a remount. Once the disk works again, the same plan installs the wheel's bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "cli/wheel_file_plan.hpp"
#include "support/failing_disk.hpp"
#include "support/paths.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/base/strings.hpp"
#include "wheel/wheel_test_support.hpp"

namespace venvfix {
namespace {

namespace wheel_testing = venvfix::wheel::testing;
using venvfix::testing::CommandResult;
using venvfix::testing::run_command;

const std::string k_wheel = "demo_pkg-1.0-py3-none-any.whl";

class ApplyOnAFailingDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = m_disk.start(); !why.empty()) GTEST_SKIP() << why;
    auto dir = TempDir::create("venvfix-failing-disk-plan-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(*dir));
    venvfix::testing::make_empty_venv(venv());
  }
  fs::path venv() const { return m_disk.root() / "venv"; }
  fs::path cache_on_the_disk() const { return m_disk.root() / "cache"; }

  CommandResult apply(const fs::path& plan_file, const fs::path& cache) const {
    return run_command({venvfix::testing::venvfix_binary(), "--venv", venv().string(),
                        "--cache-dir", cache.string(), "-q", "apply", plan_file.string(), "--yes"});
  }
  // The venv's own files (.venvfix/ is venvfix's state: its lock, its hash cache).
  std::map<std::string, wheel_testing::TreeFile> venv_files() const {
    auto tree = wheel_testing::tree_of(venv());
    std::erase_if(tree, [](const auto& item) { return item.first.starts_with(".venvfix"); });
    return tree;
  }

  venvfix::testing::FailingDisk m_disk;
  std::optional<TempDir> m_dir;  // the plan, off the failing disk
};

TEST_F(ApplyOnAFailingDisk, RefusedWritesLeaveTheVenvAsItWasAndTheSamePlanAppliesLater) {
  const fs::path wheel = wheel_testing::test_wheels() / k_wheel;
  const fs::path plan_file = m_dir->path() / "plan.json";
  venvfix::testing::write_plan_installing(venv(), cache_on_the_disk(), wheel, "demo-pkg",
                                          plan_file);
  m_disk.remount();  // the venv as made, on the disk
  const auto before = venv_files();

  // The cache on the same disk (its download fails first), and on a disk that works (the wheel
  // arrives; staging it in the venv's .venvfix/ fails).
  for (const fs::path& cache : {cache_on_the_disk(), m_dir->path() / "cache"}) {
    SCOPED_TRACE(cache);
    m_disk.refuse_writes();
    const CommandResult refused = apply(plan_file, cache);
    m_disk.accept_writes();
    // Exit 1 (an error the contract lists no code for), one sentence naming the file.
    EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
    EXPECT_NE(refused.err.find(m_disk.root().string()), std::string::npos)
        << "the error names no file on the disk: " << refused.err;
    EXPECT_NE(refused.err.find("the venv is unchanged"), std::string::npos) << refused.err;
    m_disk.remount();
    EXPECT_TRUE(venv_files() == before) << refused.err;
    for (const auto& [path, file] : wheel_testing::tree_of(venv() / ".venvfix/staging")) {
      ADD_FAILURE() << "the failed apply left " << path << " in .venvfix/staging";
    }
  }

  const CommandResult applied = apply(plan_file, cache_on_the_disk());
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  m_disk.remount();
  // Every file RECORD lists is on the disk with RECORD's hash.
  const auto after = venv_files();
  const auto record = std::find_if(after.begin(), after.end(), [](const auto& item) {
    return item.first.ends_with("/demo_pkg-1.0.dist-info/RECORD");
  });
  ASSERT_NE(record, after.end()) << "demo_pkg's RECORD is not on the disk";
  const std::string site = record->first.substr(0, record->first.find("demo_pkg-1.0.dist-info/"));
  int checked = 0;
  for (const std::string_view row : split_lines(record->second.content)) {
    const std::size_t comma = row.find(',');
    const std::size_t hash_end = row.find(',', comma + 1);
    if (comma == std::string::npos || row.compare(comma + 1, 7, "sha256=") != 0) continue;
    const auto file =
        after.find((fs::path(site) / row.substr(0, comma)).lexically_normal().generic_string());
    // pip leaves out a setuptools wrapper that an entry point replaces, and keeps its row.
    if (file == after.end() && row.find(".data/scripts/") != std::string_view::npos) continue;
    ASSERT_NE(file, after.end()) << row;
    const Sha256Digest digest = sha256(file->second.content);
    EXPECT_EQ(to_base64url_nopad(digest), row.substr(comma + 8, hash_end - comma - 8)) << row;
    ++checked;
  }
  EXPECT_GT(checked, 1);
}

}  // namespace
}  // namespace venvfix
