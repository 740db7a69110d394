// libcurl, libarchive and libcrypto are loaded when a command first downloads, unpacks or hashes,
// not at start (venvfix/base/shared_library.hpp). The real loader is the judge: LD_DEBUG=files says
// which objects a run loads, and a private mount namespace with /dev/null over a library's file
// shows what a command does when that library cannot load.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "plan/plan_test_support.hpp"
#include "support/commands.hpp"
#include "support/loaded_library.hpp"
#include "support/scratch_test.hpp"
#include "support/world.hpp"
#include "txn/apply_test_support.hpp"

namespace venvfix {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using txn::testing::expect_tree_is;
using txn::testing::fingerprint;
using venvfix::testing::CommandResult;

class LazyLibraries : public venvfix::testing::ScratchTest {
 protected:
  LazyLibraries() : ScratchTest("venvfix-lazy-libraries-") {}

  CommandResult venvfix(const fs::path& venv, const std::vector<std::string>& args,
                        std::map<std::string, std::string> env = {},
                        std::vector<std::string> launcher = {}) {
    return venvfix::testing::run_venvfix({.index_url = plan::testing::world_index_url(),
                                          .cache_dir = path("cache"),
                                          .options = {"--timeout", "5"},
                                          .hermetic = venvfix::testing::Hermetic::no,
                                          .env = std::move(env),
                                          .timeout_seconds = 300,
                                          .launcher = std::move(launcher)},
                                         venv, args);
  }

  // A plan from the test world's wheelhouse (no index), written to a file: its path.
  std::string plan_from_wheelhouse(const fs::path& venv) {
    std::string plan_file = path("plan.json").string();
    CommandResult plan =
        venvfix(venv, {"--offline", "--find-links", wheelhouse(), "plan", "-o", plan_file});
    EXPECT_EQ(plan.exit_code, 3) << plan.err;
    return plan_file;
  }
  static std::string wheelhouse() { return venvfix::testing::test_world().wheels_dir.string(); }

  // Runs venvfix where `soname`'s file reads as empty (/dev/null bound over it).
  CommandResult without(const char* soname, const fs::path& venv,
                        const std::vector<std::string>& args) {
    const std::string file = venvfix::testing::loaded_library_path(soname);
    EXPECT_FALSE(file.empty()) << soname;
    return venvfix(venv, args, {},
                   {"unshare", "-m", "--propagation", "private", "sh", "-c",
                    "mount --bind /dev/null \"$1\" && shift && exec \"$@\"", "sh", file});
  }
};

TEST_F(LazyLibraries, DoctorLoadsNeitherLibcurlNorLibarchiveAndAPlanLoadsLibcurl) {
  const fs::path venv = scenario("seed");
  CommandResult doctor = venvfix(venv, {"--json", "doctor"}, {{"LD_DEBUG", "files"}});
  EXPECT_EQ(doctor.exit_code, 3) << doctor.err;
  EXPECT_THAT(doctor.err, HasSubstr("file=libelf.so.1"));  // LD_DEBUG did report
  EXPECT_THAT(doctor.err, Not(HasSubstr("file=libcurl.so")));
  EXPECT_THAT(doctor.err, Not(HasSubstr("file=libarchive.so")));

  CommandResult plan = venvfix(venv, {"--json", "plan"}, {{"LD_DEBUG", "files"}});
  EXPECT_EQ(plan.exit_code, 3) << plan.err;
  EXPECT_THAT(plan.err, HasSubstr("file=libcurl.so.4 [0];  dynamically loaded by"));
}

TEST_F(LazyLibraries, WithoutLibcurlAPlanFromAnIndexFailsNamingItAndFindLinksStillWork) {
  if (!venvfix::testing::hermetic_available()) GTEST_SKIP() << "needs root and unshare -m";
  const fs::path venv = scenario("seed");
  const auto before = fingerprint(venv);
  CommandResult plan = without("libcurl.so.4", venv, {"plan"});
  EXPECT_EQ(plan.exit_code, 1) << plan.out << plan.err;
  EXPECT_THAT(plan.err, HasSubstr("cannot load libcurl.so.4, which venvfix needs to download: "));
  expect_tree_is(venv, before);

  // A wheelhouse on disk needs no libcurl, and the wheels' own checks no network.
  CommandResult offline =
      without("libcurl.so.4", venv, {"--offline", "--find-links", wheelhouse(), "--json", "plan"});
  EXPECT_EQ(offline.exit_code, 3) << offline.err;
}

TEST_F(LazyLibraries, WithoutLibarchiveAnApplyFailsNamingItAndLeavesTheVenvAlone) {
  if (!venvfix::testing::hermetic_available()) GTEST_SKIP() << "needs root and unshare -m";
  const fs::path venv = scenario("seed");
  const std::string plan_file = plan_from_wheelhouse(venv);
  const auto before = fingerprint(venv);
  CommandResult apply =
      without("libarchive.so.13", venv,
              {"--offline", "--find-links", wheelhouse(), "apply", "--yes", plan_file});
  EXPECT_EQ(apply.exit_code, 1) << apply.out << apply.err;
  EXPECT_THAT(apply.err,
              HasSubstr("cannot load libarchive.so.13, which venvfix needs to read wheels: "));
  expect_tree_is(venv, before);
}

// The first doctor hashes the libraries torch loads (libcrypto is loaded then); a second one
// finds them in the hash cache and never loads libcrypto, so it works without it. An apply,
// which must hash the wheels, fails naming it, with the error document, the venv untouched.
TEST_F(LazyLibraries, AWarmDoctorNeedsNoLibcryptoAndAnApplyWithoutItFailsNamingIt) {
  const fs::path venv = settled_scenario("seed");
  CommandResult first = venvfix(venv, {"--json", "doctor"}, {{"LD_DEBUG", "files"}});
  EXPECT_EQ(first.exit_code, 3) << first.err;
  EXPECT_THAT(first.err, HasSubstr("file=libcrypto.so.3 [0];  dynamically loaded by"));
  CommandResult warm = venvfix(venv, {"--json", "doctor"}, {{"LD_DEBUG", "files"}});
  EXPECT_EQ(warm.exit_code, 3) << warm.err;
  EXPECT_THAT(warm.err, HasSubstr("file=libelf.so.1"));  // LD_DEBUG did report
  EXPECT_THAT(warm.err, Not(HasSubstr("file=libcrypto.so")));

  if (!venvfix::testing::hermetic_available()) GTEST_SKIP() << "needs root and unshare -m";
  CommandResult without_crypto = without("libcrypto.so.3", venv, {"--json", "doctor"});
  EXPECT_EQ(without_crypto.exit_code, 3) << without_crypto.err;
  EXPECT_EQ(without_crypto.out, venvfix(venv, {"--json", "doctor"}).out);

  const std::string plan_file = plan_from_wheelhouse(venv);
  const auto before = fingerprint(venv);
  CommandResult apply =
      without("libcrypto.so.3", venv,
              {"--offline", "--find-links", wheelhouse(), "--json", "apply", "--yes", plan_file});
  EXPECT_EQ(apply.exit_code, 1) << apply.out << apply.err;
  EXPECT_THAT(apply.err, HasSubstr("venvfix: error: cannot load libcrypto.so.3, which venvfix "
                                   "needs to compute SHA-256 digests: "));
  auto document = nlohmann::json::parse(apply.out, nullptr, false);
  ASSERT_FALSE(document.is_discarded()) << apply.out;
  EXPECT_EQ(document.value("schema", ""), "venvfix-error/1");
  EXPECT_EQ(document.value("exit_code", 0), 1);
  EXPECT_THAT(document.value("error", ""), HasSubstr("cannot load libcrypto.so.3"));
  expect_tree_is(venv, before);
}

// An uninstall has no wheel to hash, and where earlier runs filled the hash cache its analysis
// hashes nothing either; its first digest is then the plan's digest of the venv's state
// (plan/state_digest.hpp), before the journal. So without libcrypto it stops before it moves
// anything: exit 1 naming the library, no journal, the venv as it was. Both after a doctor and
// after an uninstall that was rolled back (which leaves every digest of those files kept).
TEST_F(LazyLibraries, AnUninstallWithoutLibcryptoStopsBeforeItsJournal) {
  if (!venvfix::testing::hermetic_available()) GTEST_SKIP() << "needs root and unshare -m";
  const fs::path venv = settled_scenario("seed");
  ASSERT_EQ(venvfix(venv, {"doctor"}).exit_code, 3);
  for (const char* after : {"a doctor", "a rolled-back uninstall"}) {
    SCOPED_TRACE(after);
    const auto before = fingerprint(venv);
    CommandResult uninstall =
        without("libcrypto.so.3", venv, {"-vv", "--json", "uninstall", "nvidia-cublas"});
    EXPECT_EQ(uninstall.exit_code, 1) << uninstall.out << uninstall.err;
    EXPECT_THAT(uninstall.err, HasSubstr("venvfix: error: cannot load libcrypto.so.3, which "
                                         "venvfix needs to compute SHA-256 digests: "));
    EXPECT_THAT(uninstall.err, HasSubstr("hashed 0 (0 bytes)"));  // the analysis hashed nothing
    auto document = nlohmann::json::parse(uninstall.out, nullptr, false);
    ASSERT_FALSE(document.is_discarded()) << uninstall.out;
    EXPECT_EQ(document.value("schema", ""), "venvfix-error/1");
    EXPECT_FALSE(fs::exists(venv / ".venvfix/journal"));
    expect_tree_is(venv, before);
    // With libcrypto, a check that fails rolls the uninstall back (exit 5): every file of
    // nvidia-cublas has been hashed for the analysis and the removal.
    ASSERT_EQ(venvfix(venv, {"uninstall", "nvidia-cublas", "--verify-cmd", "false"}).exit_code, 5);
  }
}

}  // namespace
}  // namespace venvfix
