// verify::analyze's Options::stat_files_after: `run` snapshots while it analyses, and the
// analysis must stat the venv's files only once the snapshot is made (its store links change
// ctimes, which key the hash cache).
#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "plan/plan_test_support.hpp"
#include "support/scratch_test.hpp"
#include "venvfix/verify/analysis.hpp"

namespace venvfix::verify {
namespace {

using namespace std::chrono_literals;

class AnalysisTest : public venvfix::testing::ScratchTest {
 protected:
  AnalysisTest() : ScratchTest("venvfix-analysis-test-") {}
};

// The first Python module a distribution's RECORD lists outside its .dist-info.
std::string first_module(const Analysis& analysis) {
  for (const dist::Distribution& dist : analysis.inventory.distributions) {
    for (const dist::RecordEntry& entry : dist.record) {
      if (entry.path.ends_with(".py") && entry.path.find(".dist-info/") == std::string::npos) {
        return (dist.site_packages / entry.path).string();
      }
    }
  }
  return "";
}

bool reported_missing(const Analysis& analysis, const std::string& shown) {
  for (const Finding& finding : analysis.findings) {
    if (const auto* ghost = std::get_if<GhostFiles>(&finding.detail)) {
      for (const std::string& missing : ghost->missing) {
        if (missing == shown) return true;
      }
    }
  }
  return false;
}

TEST_F(AnalysisTest, FilesAreStatedOnlyOnceStatFilesAfterIsReady) {
  const fs::path venv = scenario("healthy");
  const Analysis whole = plan::testing::analyse(venv);
  const std::string module = first_module(whole);
  ASSERT_FALSE(module.empty());
  const std::string shown = whole.display_path(module);
  ASSERT_FALSE(reported_missing(whole, shown));

  std::promise<void> snapshot_made;
  Options options;
  options.stat_files_after = snapshot_made.get_future().share();
  auto opened = env::open_venv_at(venv);
  ASSERT_TRUE(opened) << opened.error().message;
  auto running = std::async(std::launch::async, [&] {
    return analyze(*opened, plan::testing::manifests(), plan::testing::hermetic_view(), options);
  });
  // It reads the RECORDs and resolves the loading, then waits.
  EXPECT_EQ(running.wait_for(300ms), std::future_status::timeout);
  // What changes before the gate opens is what it sees.
  ASSERT_TRUE(fs::remove(module));
  snapshot_made.set_value();
  auto analysis = running.get();
  ASSERT_TRUE(analysis) << analysis.error().message;
  EXPECT_TRUE(reported_missing(*analysis, shown)) << shown;
}

}  // namespace
}  // namespace venvfix::verify
