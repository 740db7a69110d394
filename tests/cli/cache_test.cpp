// venvfix cache dir|info|prune on a cache real applies filled (the test world's wheelhouse,
// offline). What info reports is checked against `find`'s listing of the same files, and what
// prune keeps against what the next apply takes from the cache (the entry's index, renewed).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "plan/plan_test_support.hpp"
#include "support/commands.hpp"
#include "support/flock_waiters.hpp"
#include "support/scratch_test.hpp"
#include "support/world.hpp"
#include "txn/apply_test_support.hpp"
#include "venvfix/fetch/cache_lock.hpp"

namespace venvfix {
namespace {

using ::testing::HasSubstr;
using venvfix::testing::CommandResult;
using venvfix::testing::someone_waits_in_flock;
using json = nlohmann::json;

class CacheCli : public venvfix::testing::ScratchTest {
 protected:
  CacheCli() : ScratchTest("venvfix-cache-cli-") {}

  CommandResult venvfix(const fs::path& venv, const std::vector<std::string>& args,
                        bool quiet = true) {
    std::vector<std::string> options = {"--offline", "--find-links", wheelhouse()};
    if (quiet) options.insert(options.begin(), "-q");
    return venvfix::testing::run_venvfix({.index_url = plan::testing::world_index_url(),
                                          .cache_dir = path("cache"),
                                          .options = options,
                                          .hermetic = venvfix::testing::Hermetic::no},
                                         venv, args);
  }
  static std::string wheelhouse() { return venvfix::testing::test_world().wheels_dir.string(); }

  json run_json(const std::vector<std::string>& args) {
    std::vector<std::string> with_json = {"--json"};
    with_json.insert(with_json.end(), args.begin(), args.end());
    CommandResult run = venvfix(path("no-venv"), with_json);
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    return json::parse(run.out, nullptr, false);
  }

  // Applies the seed's repair into a fresh copy of the seed.
  void apply_seed() {
    const fs::path venv = scenario("seed");
    CommandResult applied = venvfix(venv, {"apply", "--yes"});
    EXPECT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  }

  std::vector<fs::path> unpacked_entries() const {
    std::vector<fs::path> entries;
    for (const auto& entry : fs::directory_iterator(path("cache/unpacked"))) {
      if (entry.path().filename().string().size() == 64) entries.push_back(entry.path());
    }
    return entries;
  }

  // Whether `file` was modified in the last day (an entry's index: used since it was aged).
  static bool recent(const fs::path& file) {
    struct stat st {};
    return ::stat(file.c_str(), &st) == 0 && st.st_mtime > ::time(nullptr) - 86400;
  }

  static void age(const fs::path& file, int days) {
    const std::string when = "-" + std::to_string(days) + " days";
    ASSERT_EQ(venvfix::testing::run_command({"touch", "-h", "-d", when, file.string()}).exit_code,
              0);
  }
};

const json& part(const json& info, const std::string& name) {
  for (const json& each : info["parts"]) {
    if (each["name"] == name) return each;
  }
  static const json none;
  ADD_FAILURE() << "no part " << name << " in " << info.dump();
  return none;
}

// Bytes on disk (512-byte blocks) of the regular files under `dirs` as `find` lists them, each
// inode once, in the order
// given (a file linked under two of them counts for the first); and of those, the bytes whose
// links `find` saw all of.
std::pair<std::uint64_t, std::uint64_t> find_bytes(const std::vector<fs::path>& dirs,
                                                   std::set<std::string>& seen) {
  std::uint64_t bytes = 0;
  std::uint64_t only_here = 0;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> inodes;  // links, size
  std::map<std::string, std::uint64_t> links_seen;
  std::vector<std::string> order;
  for (const fs::path& dir : dirs) {
    CommandResult listed = venvfix::testing::run_command(
        {"find", dir.string(), "-type", "f", "-printf", "%D:%i %n %b\n"});
    std::istringstream lines(listed.out);
    std::string inode;
    std::uint64_t links = 0;
    std::uint64_t blocks = 0;
    while (lines >> inode >> links >> blocks) {
      ++links_seen[inode];
      if (inodes.emplace(inode, std::make_pair(links, blocks * 512)).second) order.push_back(inode);
    }
  }
  for (const std::string& inode : order) {
    if (!seen.insert(inode).second) continue;
    bytes += inodes[inode].second;
    if (links_seen[inode] >= inodes[inode].first) only_here += inodes[inode].second;
  }
  return {bytes, only_here};
}

TEST_F(CacheCli, DirIsTheDownloadCacheAnApplyUses) {
  const json dir = run_json({"cache", "dir"});
  EXPECT_EQ(dir.value("cache_dir", ""), path("cache").string());
  CommandResult from_env = venvfix::testing::run_command(
      {venvfix::testing::venvfix_binary(), "cache", "dir"},
      {{"VENVFIX_CACHE_DIR", ""}, {"XDG_CACHE_HOME", path("xdg").string()}});
  EXPECT_EQ(from_env.exit_code, 0) << from_env.err;
  EXPECT_EQ(from_env.out, path("xdg/venvfix").string() + "\n");
}

// info's sizes are find's, part by part; a venv that hard-links its files from the unpacked
// cache holds most of the entry's bytes, which only the cache holds once the venv is gone.
TEST_F(CacheCli, InfoSaysWhatEachPartHoldsAndWhatOnlyTheCacheHolds) {
  const json empty = run_json({"cache", "info"});
  EXPECT_EQ(empty.value("bytes", 1), 0) << empty.dump();
  apply_seed();
  const json info = run_json({"cache", "info"});
  ASSERT_EQ(info.value("schema", ""), "venvfix-cache/1") << info.dump();
  std::set<std::string> seen;
  const auto wheels = find_bytes({path("cache/wheels")}, seen);
  std::vector<fs::path> entries = unpacked_entries();
  ASSERT_FALSE(entries.empty());
  const auto unpacked = find_bytes(entries, seen);
  EXPECT_EQ(part(info, "wheels")["bytes"], wheels.first);
  EXPECT_EQ(part(info, "unpacked")["items"], entries.size());
  EXPECT_EQ(part(info, "unpacked")["bytes"], unpacked.first);
  EXPECT_GT(unpacked.first, 0u);
  EXPECT_LT(part(info, "unpacked")["cache_only_bytes"].get<std::uint64_t>(), unpacked.first / 2)
      << "the venv's hard links hold most of the entry";
  EXPECT_GT(part(info, "load-verdicts")["items"].get<std::uint64_t>(), 0u);

  for (const auto& entry : fs::directory_iterator(m_dir->path())) {
    if (entry.path().filename().string().starts_with("seed")) fs::remove_all(entry.path());
  }
  const json after = run_json({"cache", "info"});
  EXPECT_EQ(part(after, "unpacked")["cache_only_bytes"], unpacked.first);
  EXPECT_EQ(after["cache_only_bytes"], after["bytes"]);
}

// Prune removes the unpacked wheels not installed from for --unused-for days and the
// downloads as old that no entry links; an apply that installs from an entry renews it.
TEST_F(CacheCli, PruneRemovesWhatWasNotUsedAndAnInstallFromTheCacheCountsAsUse) {
  apply_seed();
  const std::vector<fs::path> entries = unpacked_entries();
  ASSERT_FALSE(entries.empty());
  json pruned = run_json({"cache", "prune"});
  EXPECT_TRUE(pruned["removed"].empty()) << pruned.dump(2);

  // Unused for 40 days, on paper: a dry run names every entry and frees nothing.
  for (const fs::path& entry : entries) age(entry / "index", 40);
  pruned = run_json({"cache", "prune", "--dry-run"});
  EXPECT_EQ(pruned["removed"].size(), entries.size()) << pruned.dump(2);
  EXPECT_TRUE(pruned.value("dry_run", false));
  EXPECT_EQ(unpacked_entries().size(), entries.size());

  // An apply that installs from them is a use (their index's mtime): they stay.
  apply_seed();
  for (const fs::path& entry : entries) EXPECT_TRUE(recent(entry / "index")) << entry;
  pruned = run_json({"cache", "prune"});
  EXPECT_TRUE(pruned["removed"].empty()) << pruned.dump(2);

  // Unused again: they go, each renamed out of place first (nothing left in unpacked/tmp).
  for (const fs::path& entry : entries) age(entry / "index", 40);
  pruned = run_json({"cache", "prune", "--unused-for", "30"});
  ASSERT_EQ(pruned.value("schema", ""), "venvfix-cache-prune/1");
  std::size_t unpacked_removed = 0;
  for (const json& item : pruned["removed"]) unpacked_removed += item["kind"] == "unpacked";
  EXPECT_EQ(unpacked_removed, entries.size()) << pruned.dump(2);
  EXPECT_TRUE(unpacked_entries().empty());
  EXPECT_TRUE(fs::is_empty(path("cache/unpacked/tmp")));
  // The next apply unpacks its wheels again (new entries), and succeeds.
  apply_seed();
  EXPECT_EQ(unpacked_entries().size(), entries.size());
}

bool appears_within(const fs::path& file, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!fs::exists(file)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

template <typename T>
bool still_running(const std::future<T>& running) {
  return running.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout;
}

// Prune never removes what a running apply may install from: the apply holds the cache's lock
// shared from its start to its end (here it pauses in its --verify-cmd, after staging from the
// cache), prune needs it alone. Without --wait prune exits 6 naming the cache and removes nothing;
// with --wait it waits for the apply, then removes what the apply used an instant before. An apply
// started during a prune waits for it, saying so.
TEST_F(CacheCli, PruneAndApplyNeverUseTheCacheAtTheSameTime) {
  apply_seed();
  const std::size_t entries = unpacked_entries().size();
  ASSERT_GT(entries, 0u);
  const fs::path started = path("started");
  const fs::path release = path("release");
  const std::string pause = "touch " + started.string() + "; i=0; while [ ! -e " +
                            release.string() +
                            " ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done";
  auto applying = std::async(std::launch::async, [&] {
    return venvfix(scenario("seed"), {"apply", "--yes", "--verify-cmd", pause});
  });
  ASSERT_TRUE(appears_within(started, std::chrono::seconds(120)));

  const CommandResult refused = venvfix(path("no-venv"), {"cache", "prune", "--unused-for", "0"});
  EXPECT_EQ(refused.exit_code, 6) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr(path("cache").string() + " is in use by another venvfix"));
  EXPECT_THAT(refused.err, HasSubstr("--wait"));
  EXPECT_EQ(unpacked_entries().size(), entries);

  auto waiting = std::async(std::launch::async, [&] {
    return venvfix(path("no-venv"), {"--json", "cache", "prune", "--unused-for", "0", "--wait"});
  });
  EXPECT_TRUE(someone_waits_in_flock(path("cache/lock"), std::chrono::seconds(120)));
  EXPECT_TRUE(still_running(waiting)) << "prune went on while the apply used the cache";
  EXPECT_EQ(unpacked_entries().size(), entries);
  txn::testing::write_text(release, "");
  const CommandResult applied = applying.get();
  EXPECT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  const CommandResult pruned = waiting.get();
  ASSERT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_GE(json::parse(pruned.out, nullptr, false)["removed"].size(), entries) << pruned.out;
  EXPECT_TRUE(unpacked_entries().empty());

  // A prune holding the cache (this process, as `cache prune` does): an apply waits for it.
  auto lock = fetch::CacheLock::acquire(path("cache"), fetch::CacheLock::Mode::exclusive,
                                        fetch::CacheLock::Wait::fail);
  ASSERT_TRUE(lock) << lock.error().message;
  auto blocked = std::async(std::launch::async, [&] {
    return venvfix(scenario("seed"), {"apply", "--yes"}, false);
  });
  EXPECT_TRUE(someone_waits_in_flock(path("cache/lock"), std::chrono::seconds(120)))
      << "no apply waits for the cache";
  EXPECT_TRUE(still_running(blocked)) << "an apply used the cache during a prune";
  lock->release();
  const CommandResult after = blocked.get();
  EXPECT_EQ(after.exit_code, 0) << after.out << after.err;
  EXPECT_THAT(after.err, HasSubstr("waiting for `venvfix cache prune` to finish with " +
                                   path("cache").string()));
  EXPECT_EQ(unpacked_entries().size(), entries) << "the apply unpacked its wheels again";
}

// A downloaded wheel goes once it is as old and nothing links it: not while its entry stays, nor
// while a link outside the cache (a wheelhouse's, say) holds its bytes; a dry run counts the
// entry it would remove with it.
TEST_F(CacheCli, PruneRemovesOldDownloadsOnlyWhenNothingElseLinksThem) {
  apply_seed();
  std::vector<fs::path> blobs;
  for (const auto& file : fs::recursive_directory_iterator(path("cache/wheels"))) {
    if (file.is_regular_file()) blobs.push_back(file.path());
  }
  ASSERT_FALSE(blobs.empty()) << "the apply downloaded no wheel into the cache";
  for (const fs::path& blob : blobs) age(blob, 40);
  json pruned = run_json({"cache", "prune"});
  EXPECT_TRUE(pruned["removed"].empty()) << "linked by a fresh entry: " << pruned.dump(2);

  auto removed_wheels = [](const json& report) {
    std::set<std::string> wheels;
    for (const json& item : report["removed"]) {
      if (item["kind"] == "wheel") wheels.insert(item["path"].get<std::string>());
    }
    return wheels;
  };
  std::set<std::string> all_blobs;
  for (const fs::path& blob : blobs) all_blobs.insert(blob.string());
  for (const fs::path& entry : unpacked_entries()) age(entry / "index", 40);
  EXPECT_EQ(removed_wheels(run_json({"cache", "prune", "--dry-run"})), all_blobs);

  // The first blob also linked outside the cache: its entry goes, it stays.
  fs::create_directories(path("wheelhouse"));
  fs::create_hard_link(blobs[0], path("wheelhouse/kept.whl"));
  pruned = run_json({"cache", "prune"});
  std::set<std::string> expected = all_blobs;
  expected.erase(blobs[0].string());
  EXPECT_EQ(removed_wheels(pruned), expected) << pruned.dump(2);
  EXPECT_TRUE(unpacked_entries().empty());
  EXPECT_TRUE(fs::exists(blobs[0]));
  std::uint64_t freed = 0;
  for (const json& item : pruned["removed"]) freed += item["freed_bytes"].get<std::uint64_t>();
  EXPECT_EQ(pruned["freed_bytes"], freed);

  // Its last other link gone, it goes, freeing its blocks.
  struct stat st {};
  ASSERT_EQ(::stat(blobs[0].c_str(), &st), 0);
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_blocks) * 512;
  fs::remove(path("wheelhouse/kept.whl"));
  pruned = run_json({"cache", "prune"});
  EXPECT_EQ(removed_wheels(pruned), std::set<std::string>{blobs[0].string()}) << pruned.dump(2);
  EXPECT_EQ(pruned["freed_bytes"], size);
}

// Temporary files and directories of writers that stopped go at any --unused-for; fresh ones,
// which a running writer may own, and kept verdicts stay.
TEST_F(CacheCli, PruneRemovesOnlyTheTemporariesOfWritersThatStopped) {
  const std::vector<fs::path> old_ones = {path("cache/tmp/download.old"),
                                          path("cache/unpacked/tmp/entry.old"),
                                          path("cache/load-verdicts-v1/a.json.tmp.4242")};
  const std::vector<fs::path> fresh_ones = {path("cache/tmp/download.new"),
                                            path("cache/unpacked/tmp/entry.new"),
                                            path("cache/load-verdicts-v1/b.json")};
  // The unpacked cache's crashed writer left a directory; the others, files.
  txn::testing::write_text(old_ones[1] / "m/lib.so", "partial");
  txn::testing::write_text(fresh_ones[1] / "m/lib.so", "partial");
  for (const fs::path& file : {old_ones[0], old_ones[2], fresh_ones[0], fresh_ones[2]}) {
    txn::testing::write_text(file, "x");
  }
  for (const fs::path& file : old_ones) age(file, 1);
  age(fresh_ones[2], 1);  // a verdict, however old, is not prune's to remove

  const json pruned = run_json({"cache", "prune", "--unused-for", "365"});
  std::set<std::string> removed;
  for (const json& item : pruned["removed"]) {
    EXPECT_EQ(item["kind"], "temporary") << item.dump();
    removed.insert(item["path"].get<std::string>());
  }
  EXPECT_EQ(removed, (std::set<std::string>{old_ones[0].string(), old_ones[1].string(),
                                            old_ones[2].string()}));
  for (const fs::path& file : old_ones) EXPECT_FALSE(fs::exists(file)) << file;
  for (const fs::path& file : fresh_ones) EXPECT_TRUE(fs::exists(file)) << file;
}

TEST_F(CacheCli, ANegativeAgeIsBadUsage) {
  CommandResult run = venvfix(path("no-venv"), {"cache", "prune", "--unused-for", "-1"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("--unused-for: must be a number of at least 0, not '-1'"));
}

}  // namespace
}  // namespace venvfix
