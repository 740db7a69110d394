// What removing a distribution takes out: the same files `pip uninstall` deletes (cross-checked
// against pip itself on the test world), except paths another distribution still owns, and
// never anything outside the venv.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "txn/apply_test_support.hpp"
#include "venvfix/apply/removal.hpp"
#include "venvfix/dist/inventory.hpp"

namespace venvfix::apply {
namespace {

using namespace venvfix::txn::testing;
using ::testing::Contains;
using ::testing::IsEmpty;
using ::testing::Not;

class Removal : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-removal-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
  }
  std::optional<TempDir> m_dir;
};

std::size_t index_of(const dist::Inventory& inventory, const std::string& name) {
  const dist::Distribution* found = inventory.find(name);
  EXPECT_NE(found, nullptr) << name;
  return static_cast<std::size_t>(found - inventory.distributions.data());
}

// Files and symlinks that exist in `before` and not in `after`.
std::set<std::string> removed_files(const std::map<std::string, std::string>& before,
                                    const std::map<std::string, std::string>& after) {
  std::set<std::string> out;
  for (const auto& [path, value] : before) {
    if (!value.starts_with("dir") && !after.count(path)) out.insert(path);
  }
  return out;
}

TEST_F(Removal, TakesOutWhatPipUninstallTakesOut) {
  fs::path root = venvfix::testing::make_scenario("healthy", m_dir->path());
  auto venv = env::open_venv_at(root);
  ASSERT_TRUE(venv);
  // Byte-code as an import leaves it, so the __pycache__ rule is exercised.
  auto compiled = run_command({(root / "bin/python").string(), "-m", "compileall", "-q",
                               (venv->purelib / "filelock").string()},
                              {}, 120);
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  auto inventory = dist::read_inventory(*venv);
  ASSERT_TRUE(inventory);

  for (const char* name : {"filelock", "nvidia-cublas-cu12"}) {
    std::size_t index = index_of(*inventory, name);
    apply::Removal removal = plan_removal(*venv, *inventory, index, {index});
    EXPECT_THAT(removal.kept, IsEmpty()) << name;
    EXPECT_THAT(removal.refused, IsEmpty()) << name;
    auto before = fingerprint(root);
    auto pip = run_command({(root / "bin/python").string(), "-m", "pip", "uninstall", "-y", name},
                           {{"PIP_DISABLE_PIP_VERSION_CHECK", "1"}, {"PIP_NO_INPUT", "1"}}, 120);
    ASSERT_EQ(pip.exit_code, 0) << pip.err;
    std::set<std::string> ours(removal.remove.begin(), removal.remove.end());
    EXPECT_EQ(ours, removed_files(before, fingerprint(root))) << name;
  }
}

TEST_F(Removal, KeepsWhatARemainingDistributionOwns) {
  fs::path root = venvfix::testing::make_scenario("clobbered", m_dir->path());
  auto venv = env::open_venv_at(root);
  ASSERT_TRUE(venv);
  auto inventory = dist::read_inventory(*venv);
  ASSERT_TRUE(inventory);
  const std::string site = venv->purelib.lexically_relative(root).generic_string();
  std::size_t cu12 = index_of(*inventory, "nvidia-cudnn-cu12");
  std::size_t cu13 = index_of(*inventory, "nvidia-cudnn-cu13");

  apply::Removal removal = plan_removal(*venv, *inventory, cu12, {cu12});
  EXPECT_THAT(removal.kept, Contains(site + "/nvidia/cudnn/lib/libcudnn.so.9"));
  EXPECT_THAT(removal.remove, Not(Contains(site + "/nvidia/cudnn/lib/libcudnn.so.9")));
  EXPECT_THAT(removal.remove, Contains(site + "/nvidia_cudnn_cu12-9.10.2.21.dist-info/RECORD"));
  for (const std::string& path : removal.remove) {
    EXPECT_TRUE(inventory->owners_of(root / path).empty() ||
                inventory->owners_of(root / path) == std::vector<std::size_t>{cu12})
        << path;
  }
  // When both go in one transaction, nothing is kept for either.
  apply::Removal both = plan_removal(*venv, *inventory, cu12, {cu12, cu13});
  EXPECT_THAT(both.kept, IsEmpty());
  EXPECT_THAT(both.remove, Contains(site + "/nvidia/cudnn/lib/libcudnn.so.9"));
}

TEST_F(Removal, ByteCodeScriptsAndNothingOutsideTheVenv) {
  fs::path root = minimal_venv(m_dir->path() / "venv");
  auto venv = env::open_venv_at(root);
  ASSERT_TRUE(venv);
  const fs::path site = venv->purelib;
  const fs::path outside = m_dir->path() / "outside";
  write_text(outside / "victim.py", "keep me\n");
  write_text(m_dir->path() / "escape.txt", "keep me\n");
  fs::create_directory_symlink(outside, site / "link");
  write_text(site / "mod.py", "x = 1\n");
  write_text(site / "__pycache__/mod.cpython-312.pyc", "pyc");
  write_text(site / "__pycache__/mod.cpython-311.opt-1.pyc", "pyc");
  write_text(site / "__pycache__/mod.extra.cpython-312.pyc", "another module's");
  write_text(site / "__pycache__/module.cpython-312.pyc", "another module's");
  write_text(root / "bin/tool", "#!/bin/sh\n");
  const fs::path info = site / "demo-1.0.dist-info";
  write_text(info / "METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n");
  write_text(info / "entry_points.txt", "[console_scripts]\ntool = demo:main\n");
  write_text(info / "unlisted.txt", "pip leaves no half dist-info either\n");
  write_text(info / "RECORD",
             "mod.py,,\n"
             "demo-1.0.dist-info/METADATA,,\n"
             "demo-1.0.dist-info/RECORD,,\n"
             "link/victim.py,,\n"
             "../../../../escape.txt,,\n"
             "../../../.venvfix/lock,,\n");
  write_text(root / ".venvfix/lock", "");
  auto inventory = dist::read_inventory(*venv);
  ASSERT_TRUE(inventory);
  std::size_t demo = index_of(*inventory, "demo");
  apply::Removal removal = plan_removal(*venv, *inventory, demo, {demo});
  const std::string s = site.lexically_relative(root).generic_string();
  EXPECT_EQ(removal.remove,
            (std::vector<std::string>{
                "bin/tool", s + "/__pycache__/mod.cpython-311.opt-1.pyc",
                s + "/__pycache__/mod.cpython-312.pyc", s + "/demo-1.0.dist-info/METADATA",
                s + "/demo-1.0.dist-info/RECORD", s + "/demo-1.0.dist-info/entry_points.txt",
                s + "/demo-1.0.dist-info/unlisted.txt", s + "/mod.py"}));
  EXPECT_EQ(removal.refused.size(), 3u);
  EXPECT_EQ(venv_relative(*venv, root / "a/../b"), "b");
  EXPECT_EQ(venv_relative(*venv, root / ".venvfix/x"), "");
  EXPECT_EQ(venv_relative(*venv, root.parent_path() / "x"), "");
}

}  // namespace
}  // namespace venvfix::apply
