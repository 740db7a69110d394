// `venvfix rollback` stopped before each mkdir, rename or unlink N of its transaction (a
// crash-point build: VENVFIX_CRASH_AT=N and VENVFIX_CRASH_OPS, see step_fs.hpp), then
// `venvfix recover`: the venv is exactly the state
// before or after the rollback. Both kinds of snapshot are restored: a whole-venv snapshot and a
// transaction's snapshot.
#include <gtest/gtest.h>

#include "support/paths.hpp"
#include "support/world.hpp"
#include "txn/txn_test_support.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/snapshot.hpp"
#include "venvfix/txn/step_fs.hpp"
#include "venvfix/txn/transaction.hpp"

namespace venvfix::txn {
namespace {

using testing::fingerprint;
using testing::k_site;
using testing::make_small_venv;
using testing::write_text;

venvfix::testing::CommandResult cli(const env::Venv& venv, std::vector<std::string> args,
                                    const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), {venvfix::testing::venvfix_binary(), "--venv", venv.root.string()});
  return venvfix::testing::run_command(args, env, 120);
}

enum class Kind { tree, transaction };

class RecoverCli : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    auto dir = testing::memory_temp_dir("venvfix-recover-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
  }

  // A venv with a snapshot to roll back to: its fingerprints at the snapshot ("target") and
  // now ("current"), and the snapshot id.
  struct Setup {
    env::Venv venv;
    std::string id;
    Fingerprint target;
    Fingerprint current;
  };
  Setup setup(Kind kind) {
    fs::path dir = m_dir->path() / std::to_string(m_count++);
    fs::create_directories(dir);
    Setup s{make_small_venv(dir), "", {}, {}};
    fs::path site = s.venv.root / k_site;
    for (int i = 0; i < 6; ++i) write_text(site / fmt::format("extra/e{}.py", i), "e");
    s.target = fingerprint(s.venv);
    auto lock = VenvLock::acquire(s.venv, LockWait::fail);
    EXPECT_TRUE(lock);
    if (kind == Kind::tree) {
      auto info = create_snapshot(s.venv, *lock, "test");
      EXPECT_TRUE(info);
      s.id = info->id;
      // What pip does to a venv.
      fs::remove_all(site / "extra");
      fs::remove(site / "pkg/__init__.py");
      write_text(site / "pkg/__init__.py", "other\n");
      write_text(site / "added/x.py", "x");
    } else {
      auto staging = make_staging_dir(s.venv);
      write_text(*staging / k_site / "pkg/__init__.py", "x = 2\n");
      write_text(*staging / k_site / "fresh/a.py", "a\n");
      ChangeSet changes{
          "test",
          *staging,
          {k_site + "/pkg/__init__.py", k_site + "/fresh/a.py"},
          {k_site + "/extra/e0.py", k_site + "/extra/e1.py", k_site + "/extra/e2.py",
           k_site + "/extra/e3.py", k_site + "/extra/e4.py", k_site + "/extra/e5.py"}};
      auto txn = Transaction::begin(s.venv, *lock, changes);
      EXPECT_TRUE(txn);
      EXPECT_TRUE(txn->execute());
      auto id = txn->commit(KeepSnapshot::yes);
      EXPECT_TRUE(id && id->has_value());
      s.id = **id;
    }
    s.current = fingerprint(s.venv);
    EXPECT_NE(s.current, s.target);
    return s;
  }
  std::optional<TempDir> m_dir;
  int m_count = 0;
};

TEST_P(RecoverCli, RollbackCrashedAtEveryEventRecoversToBeforeOrAfter) {
  if (!crash_points_compiled()) GTEST_SKIP() << "built without -DVENVFIX_CRASH_POINTS=ON";
  int crashed = 0, befores = 0, afters = 0;
  for (long n = 0; n < 500; ++n) {
    Setup s = setup(GetParam());
    auto rolled = cli(
        s.venv, {"rollback", s.id},
        {{"VENVFIX_CRASH_AT", std::to_string(n)}, {"VENVFIX_CRASH_OPS", "make_dir,rename,remove"}});
    if (rolled.exit_code == 0) {
      EXPECT_EQ(fingerprint(s.venv), s.target);
      break;
    }
    ASSERT_EQ(rolled.exit_code, k_crash_exit_code) << rolled.err;
    ++crashed;
    // Stopped before write n of the restore: a journal exists from its first durable write
    // until the cleanup after the commit removes it, and only then are commands refused.
    bool journaled = fs::exists(s.venv.root / ".venvfix/journal/journal.json");
    auto blocked = cli(s.venv, {"snapshot", "list"});
    EXPECT_EQ(blocked.exit_code == 6, journaled) << blocked.err;
    auto recovered = cli(s.venv, {"recover"});
    ASSERT_EQ(recovered.exit_code, 0) << recovered.err;
    auto now = fingerprint(s.venv);
    if (now == s.current) {
      EXPECT_EQ(afters, 0) << "crash point " << n << " recovered to before after an earlier after";
      ++befores;
      if (journaled) {
        EXPECT_NE(recovered.out.find("back to exactly the state before"), std::string::npos);
      }
    } else if (now == s.target) {
      ++afters;
    } else {
      ADD_FAILURE() << "crash point " << n << " left a mix:\n"
                    << describe_difference(s.current, now);
    }
  }
  std::printf("rollback (%s snapshot) crash matrix: %d crash points, %d before, %d after\n",
              GetParam() == Kind::tree ? "tree" : "transaction", crashed, befores, afters);
  EXPECT_GT(crashed, 5);
  EXPECT_GT(befores, 0);
  EXPECT_GT(afters, 0);
  EXPECT_EQ(befores + afters, crashed);
}

INSTANTIATE_TEST_SUITE_P(Kinds, RecoverCli, ::testing::Values(Kind::tree, Kind::transaction),
                         [](const auto& param_info) {
                           return param_info.param == Kind::tree ? std::string("Tree")
                                                                 : std::string("Transaction");
                         });

}  // namespace
}  // namespace venvfix::txn
