// The state digest a plan carries: equal for equal venv states wherever they live, different
// as soon as the inventory or what the file checks saw differs.
#include <gtest/gtest.h>

#include <fstream>

#include "plan/plan_test_support.hpp"
#include "support/scratch_test.hpp"

namespace venvfix::plan {
namespace {

using namespace venvfix::plan::testing;

class PlanStateDigest : public venvfix::testing::ScratchTest {
 protected:
  PlanStateDigest() : ScratchTest("venvfix-plan-state-") {}
};

TEST_F(PlanStateDigest, SameStateSameDigestWhereverTheVenvLives) {
  fs::path first = venvfix::testing::make_scenario("killed-install", m_dir->path() / "a");
  // The same bytes elsewhere, with other inodes and times (cp -a; a scenario made there would
  // differ in its scripts' shebangs, as pip writes them for their place).
  fs::path second = m_dir->path() / "b" / "killed-install";
  fs::create_directories(second.parent_path());
  ASSERT_EQ(venvfix::testing::run_command({"cp", "-a", first.string(), second.string()}).exit_code,
            0);
  std::string digest = state_digest(analyse(first));
  EXPECT_EQ(digest.size(), 64u);
  EXPECT_EQ(digest.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(digest, state_digest(analyse(first)));   // deterministic
  EXPECT_EQ(digest, state_digest(analyse(second)));  // no absolute path, inode or time in it
  EXPECT_EQ(state_by_distribution(analyse(first)), state_by_distribution(analyse(second)));
}

TEST_F(PlanStateDigest, ChangesWithWhatTheChecksSee) {
  fs::path venv = scenario("healthy");
  fs::path site = site_packages_of(venv);
  std::string healthy = state_digest(analyse(venv));

  // Same size, other bytes, in a library torch loads (always hash-checked): mismatched.
  fs::path library = site / "nvidia/cufft/lib/libcufft.so.11";
  auto bytes = read_file(library);
  ASSERT_TRUE(bytes);
  std::string changed = *bytes;
  changed[changed.size() - 1] = static_cast<char>(changed.back() ^ 0x5a);
  fs::remove(library);  // a new inode, as an installer would write it
  std::ofstream(library, std::ios::binary) << changed;
  std::string mismatched = state_digest(analyse(venv));
  EXPECT_NE(mismatched, healthy);

  fs::remove(library);  // now missing: a ghost file
  std::string missing = state_digest(analyse(venv));
  EXPECT_NE(missing, healthy);
  EXPECT_NE(missing, mismatched);

  std::ofstream(library, std::ios::binary) << *bytes;  // back as it was
  EXPECT_EQ(state_digest(analyse(venv)), healthy);

  write_distribution(site, "another", "1.0", {"nvidia-cudnn-cu12"});
  EXPECT_NE(state_digest(analyse(venv)), healthy);
}

// What `apply` says of a venv that drifted from its plan: the distributions that differ, each
// by name, in the words of describe_drift.
TEST_F(PlanStateDigest, DriftNamesTheDistributionsThatDiffer) {
  fs::path venv = scenario("healthy");
  fs::path site = site_packages_of(venv);
  const std::vector<DistState> planned = state_by_distribution(analyse(venv));
  ASSERT_FALSE(planned.empty());
  for (const DistState& state : planned) EXPECT_EQ(state.digest.size(), 16u) << state.dist;
  EXPECT_EQ(describe_drift(planned, state_by_distribution(analyse(venv))),
            "its site-packages directories differ");  // nothing per distribution

  // A library's bytes changed in place of its distribution's RECORD: that distribution only.
  fs::path library = site / "nvidia/cufft/lib/libcufft.so.11";
  auto bytes = read_file(library);
  ASSERT_TRUE(bytes);
  fs::remove(library);
  std::string drift = describe_drift(planned, state_by_distribution(analyse(venv)));
  EXPECT_NE(drift.find("nvidia-cufft-cu12"), std::string::npos) << drift;
  EXPECT_NE(drift.find("changed (its RECORD, metadata or files differ)"), std::string::npos);
  EXPECT_EQ(drift.find("torch"), std::string::npos) << drift;
  std::ofstream(library, std::ios::binary) << *bytes;

  // Added and gone: a new distribution, and one whose dist-info was taken away.
  write_distribution(site, "another", "1.0", {});
  fs::path cufft_info;
  for (const auto& entry : fs::directory_iterator(site)) {
    if (entry.path().filename().string().starts_with("nvidia_cufft_cu12-")) {
      cufft_info = entry.path();
    }
  }
  ASSERT_FALSE(cufft_info.empty());
  fs::rename(cufft_info, m_dir->path() / "moved-away.dist-info");
  drift = describe_drift(planned, state_by_distribution(analyse(venv)));
  EXPECT_NE(drift.find("another 1.0 was added"), std::string::npos) << drift;
  EXPECT_NE(drift.find("nvidia-cufft-cu12 "), std::string::npos) << drift;
  EXPECT_NE(drift.find(" is gone"), std::string::npos) << drift;

  // Another version of the same name.
  std::vector<DistState> older = planned;
  for (DistState& state : older) {
    if (state.dist == "torch") state.version = "2.0.0";
  }
  fs::rename(m_dir->path() / "moved-away.dist-info", cufft_info);
  fs::remove_all(site / "another-1.0.dist-info");
  drift = describe_drift(older, state_by_distribution(analyse(venv)));
  EXPECT_NE(drift.find("torch 2.0.0 is "), std::string::npos) << drift;
  EXPECT_NE(drift.find(" now"), std::string::npos) << drift;
}

}  // namespace
}  // namespace venvfix::plan
