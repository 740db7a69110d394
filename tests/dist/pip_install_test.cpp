// The inventory and file checks against distributions installed by pip itself, from wheels the
// test builds: pip writes the RECORDs, pip overwrites a shared path, pip's uninstall leaves the
// ghost. One venv (with pip) serves the whole suite because making it takes seconds.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "env/test_support.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/dist/file_check.hpp"
#include "venvfix/dist/inventory.hpp"

namespace venvfix::dist {
namespace {

using test_support::run_command;
using test_support::shell_quote;

// Writes a wheel: {"name", "version", "files": {path: content}} -> dist/<name>-<v>-py3-none-any.whl
constexpr const char* k_make_wheel = R"PY(
import base64, hashlib, json, sys, zipfile
spec = json.loads(sys.argv[1])
name, version = spec["name"], spec["version"]
info = f"{name}-{version}.dist-info"
files = dict(spec["files"])
files[f"{info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" +
    "".join(f"Requires-Dist: {r}\n" for r in spec.get("requires", [])))
files[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: venvfix-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
record = []
for path, content in files.items():
    data = content.encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(data)}")
record.append(f"{info}/RECORD,,")
files[f"{info}/RECORD"] = "\n".join(record) + "\n"
out = f"{sys.argv[2]}/{name}-{version}-py3-none-any.whl"
with zipfile.ZipFile(out, "w") as z:
    for path, content in files.items():
        z.writestr(zipfile.ZipInfo(path), content)
print(out)
)PY";

class DistPipInstall : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = TempDir::create("venvfix-pip-");
    ASSERT_TRUE(dir);
    s_dir = new TempDir(std::move(*dir));
    s_root = s_dir->path() / "venv";
    ASSERT_TRUE(test_support::make_venv(s_root, test_support::WithPip::yes));
    test_support::write_text(s_dir->path() / "make_wheel.py", k_make_wheel);
    fs::create_directories(s_dir->path() / "wheels");
  }
  static void TearDownTestSuite() {
    delete s_dir;
    s_dir = nullptr;
  }

  static std::string make_wheel(const nlohmann::json& spec) {
    auto out = run_command("python3 " + shell_quote((s_dir->path() / "make_wheel.py").string()) +
                           " " + shell_quote(spec.dump()) + " " +
                           shell_quote((s_dir->path() / "wheels").string()));
    EXPECT_EQ(out.status, 0);
    while (!out.out.empty() && out.out.back() == '\n') out.out.pop_back();
    return out.out;
  }

  static int pip(const std::string& arguments) {
    return run_command(shell_quote((s_root / "bin" / "python").string()) +
                       " -m pip --disable-pip-version-check --no-input -q " + arguments + " >&2")
        .status;
  }

  static Inventory inventory() {
    auto venv = env::open_venv_at(s_root);
    EXPECT_TRUE(venv);
    auto inventory = read_inventory(*venv);
    EXPECT_TRUE(inventory);
    return std::move(*inventory);
  }

  static const FileCheck* check_of(const FileCheckReport& report, const Inventory& inventory,
                                   std::string_view dist, std::string_view record_path) {
    for (const FileCheck& check : report.checks) {
      if (inventory.distributions[check.dist].normalized_name == dist &&
          check.record_path == record_path) {
        return &check;
      }
    }
    return nullptr;
  }

  static TempDir* s_dir;
  static fs::path s_root;
};

TempDir* DistPipInstall::s_dir = nullptr;
fs::path DistPipInstall::s_root;

TEST_F(DistPipInstall, InventoryMatchesImportlibMetadata) {
  // What the venv's own Python sees (importlib.metadata reads the same RECORD files).
  auto out = run_command(shell_quote((s_root / "bin" / "python").string()) + " -c " +
                         shell_quote("import importlib.metadata as m, json; print(json.dumps("
                                     "{d.metadata['Name']: [d.version, sorted(str(f) for f in "
                                     "(d.files or []))] for d in m.distributions()}))"));
  ASSERT_EQ(out.status, 0);
  auto expected = nlohmann::json::parse(out.out);
  Inventory inv = inventory();
  ASSERT_EQ(inv.distributions.size(), expected.size());
  for (const auto& [name, value] : expected.items()) {
    const Distribution* dist = inv.find(name);
    ASSERT_NE(dist, nullptr) << name;
    EXPECT_EQ(dist->version, value[0].get<std::string>());
    EXPECT_EQ(dist->installer, "pip");
    EXPECT_TRUE(dist->problems.empty()) << dist->problems.front();
    std::vector<std::string> ours;
    for (const RecordEntry& entry : dist->record) ours.push_back(entry.path);
    std::sort(ours.begin(), ours.end());
    EXPECT_EQ(ours, value[1].get<std::vector<std::string>>()) << name;
  }
  // And every file pip installed is where its RECORD says, with the recorded hash.
  FileCheckReport report = check_files(inv, all_entries(inv), HashPolicy::full, {}, nullptr);
  for (const FileCheck& check : report.checks) {
    EXPECT_EQ(check.state, FileState::ok) << check.path << ": " << to_string(check.state);
  }
}

TEST_F(DistPipInstall, SharedPathClobberedThenGhostAfterUninstall) {
  const std::string cu12(4096, '2');
  const std::string cu13(4096, '3');
  std::string alpha = make_wheel({{"name", "alpha"},
                                  {"version", "1.0"},
                                  {"files",
                                   {{"alpha/__init__.py", ""},
                                    {"shared/lib/libshared.so.1", cu12},
                                    {"alpha-1.0.data/scripts/alpha-tool", "#!/bin/sh\necho\n"}}}});
  std::string beta =
      make_wheel({{"name", "Beta_Pkg"},
                  {"version", "2.0"},
                  {"files", {{"beta/__init__.py", ""}, {"shared/lib/libshared.so.1", cu13}}}});
  // One pip run installs both (pip's start-up costs seconds); whichever it installs last owns
  // the shared bytes, and the other's RECORD no longer matches them.
  ASSERT_EQ(pip("install --no-index --no-deps " + shell_quote(alpha) + " " + shell_quote(beta)), 0);

  Inventory inv = inventory();
  const Distribution* a = inv.find("alpha");
  const Distribution* b = inv.find("beta-pkg");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->name, "Beta_Pkg");
  const fs::path site = a->site_packages;
  const fs::path shared = site / "shared/lib/libshared.so.1";
  EXPECT_EQ(inv.owners_of(shared).size(), 2u);
  // pip wrote the script's path relative to site-packages: ../../../bin/alpha-tool.
  EXPECT_EQ(inv.owners_of(s_root / "bin" / "alpha-tool").size(), 1u);

  auto bytes = read_file(shared);
  ASSERT_TRUE(bytes);
  ASSERT_TRUE(*bytes == cu12 || *bytes == cu13);
  const bool beta_won = *bytes == cu13;
  std::unordered_set<std::string> target_libraries{shared.string()};
  FileCheckReport clobbered =
      check_files(inv, all_entries(inv), HashPolicy::size_only, target_libraries, nullptr);
  const FileCheck* alpha_lib = check_of(clobbered, inv, "alpha", "shared/lib/libshared.so.1");
  const FileCheck* beta_lib = check_of(clobbered, inv, "beta-pkg", "shared/lib/libshared.so.1");
  ASSERT_NE(alpha_lib, nullptr);
  ASSERT_NE(beta_lib, nullptr);
  EXPECT_EQ(alpha_lib->state, beta_won ? FileState::hash_mismatch : FileState::ok);
  EXPECT_EQ(beta_lib->state, beta_won ? FileState::ok : FileState::hash_mismatch);
  EXPECT_EQ(*alpha_lib->actual_sha256, sha256(*bytes));
  EXPECT_EQ(clobbered.files_hashed, 1u);  // only the target library, and only once

  // pip uninstall removes the shared path although alpha still lists it: the ghost.
  ASSERT_EQ(pip("uninstall -y beta-pkg"), 0);
  inv = inventory();
  ASSERT_EQ(inv.find("beta-pkg"), nullptr);
  FileCheckReport ghost = check_files(inv, all_entries(inv), HashPolicy::size_only, {}, nullptr);
  const FileCheck* ghost_lib = check_of(ghost, inv, "alpha", "shared/lib/libshared.so.1");
  ASSERT_NE(ghost_lib, nullptr);
  EXPECT_EQ(ghost_lib->state, FileState::missing);
  EXPECT_EQ(check_of(ghost, inv, "alpha", "alpha/__init__.py")->state, FileState::ok);
  EXPECT_EQ(check_of(ghost, inv, "alpha", "../../../bin/alpha-tool")->state, FileState::ok);
}

}  // namespace
}  // namespace venvfix::dist
