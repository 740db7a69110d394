#include "venvfix/dist/scan.hpp"

#include <gtest/gtest.h>

#include "env/test_support.hpp"

namespace venvfix::dist {
namespace {

TEST(DistScan, NamesThatLookLikeSharedObjects) {
  EXPECT_TRUE(looks_like_shared_object("libcudnn.so.9"));
  EXPECT_TRUE(looks_like_shared_object("libcublas.so.12.8.4.1"));
  EXPECT_TRUE(looks_like_shared_object("libtorch_cuda.so"));
  EXPECT_TRUE(looks_like_shared_object("_C.cpython-312-x86_64-linux-gnu.so"));
  EXPECT_FALSE(looks_like_shared_object(".so"));
  EXPECT_FALSE(looks_like_shared_object("x.so."));
  EXPECT_FALSE(looks_like_shared_object("x.sox"));
  EXPECT_FALSE(looks_like_shared_object("so"));
  EXPECT_FALSE(looks_like_shared_object("module.py"));
  EXPECT_FALSE(looks_like_shared_object("libfoo.a"));
}

TEST(DistScan, FindsLibrariesInEverySitePackages) {
  auto dir = TempDir::create("venvfix-scan-");
  ASSERT_TRUE(dir);
  fs::path root = dir->path() / "venv";
  ASSERT_TRUE(test_support::copy_of_template_venv(root));
  auto opened = env::open_venv_at(root);
  ASSERT_TRUE(opened);
  std::string lib = opened->purelib.parent_path().filename().string();
  fs::remove(root / "lib64");
  fs::path site64 = root / "lib64" / lib / "site-packages";
  fs::create_directories(site64);
  auto venv = env::open_venv_at(root);
  ASSERT_TRUE(venv);
  ASSERT_EQ(venv->site_packages.size(), 2u);
  fs::path site = venv->purelib;

  using test_support::write_text;
  write_text(site / "nvidia/cudnn/lib/libcudnn.so.9", "ELF");
  write_text(site / "nvidia/cudnn/lib/libcudnn_ops.so.9", "ELF");
  write_text(site / "nvidia/cudnn/__init__.py", "");
  write_text(site / "nvidia/cudnn/__pycache__/x.so", "skipped");
  write_text(site / ".venvfix/snap.so", "skipped");
  write_text(site64 / "torch/lib/libtorch_cuda.so", "ELF");
  write_text(site64 / "torch/_C.cpython-312-x86_64-linux-gnu.so", "ELF");
  fs::create_symlink("libcudnn.so.9", site / "nvidia/cudnn/lib/libcudnn.so");
  fs::create_directories(site / "nvidia/dir.so");                // a directory named like a library
  fs::create_directory_symlink(site / "nvidia", site / "loop");  // not entered

  auto found = scan_site_packages(*venv);
  std::vector<std::string> paths;
  paths.reserve(found.size());
  for (const ScannedFile& file : found) paths.push_back(file.path.string());
  std::vector<std::string> expected = {
      (site / "nvidia/cudnn/lib/libcudnn.so").string(),
      (site / "nvidia/cudnn/lib/libcudnn.so.9").string(),
      (site / "nvidia/cudnn/lib/libcudnn_ops.so.9").string(),
      (site64 / "torch/_C.cpython-312-x86_64-linux-gnu.so").string(),
      (site64 / "torch/lib/libtorch_cuda.so").string(),
  };
  EXPECT_EQ(paths, expected);
  ASSERT_EQ(found.size(), 5u);
  EXPECT_TRUE(found[0].is_symlink());
  EXPECT_FALSE(found[1].is_symlink());
  EXPECT_EQ(found[1].identity.size, 3u);
  EXPECT_EQ(found[1].site_packages, 0u);
  EXPECT_EQ(found[3].site_packages, 1u);
  auto identity = file_identity(found[2].path);
  ASSERT_TRUE(identity);
  EXPECT_EQ(found[2].identity, *identity);
}

TEST(DistScan, PipStashesAreListedNotEntered) {
  auto dir = TempDir::create("venvfix-scan-");
  ASSERT_TRUE(dir);
  fs::path root = dir->path() / "venv";
  ASSERT_TRUE(test_support::copy_of_template_venv(root));
  auto venv = env::open_venv_at(root);
  ASSERT_TRUE(venv);
  fs::path site = venv->purelib;
  using test_support::write_text;
  // What pip's AdjacentTempDirectory names: "~" for the first letter, then "~-", "~~", ...
  write_text(site / "~orch/lib/libtorch.so", "ELF");
  write_text(site / "~orch-2.8.0.dist-info/RECORD", "torch/lib/libtorch.so,,\n");
  write_text(site / "nvidia/~udnn/lib/libcudnn.so.9", "ELF");
  write_text(site / "nvidia/cudnn/lib/libcudnn.so.9", "ELF");
  write_text(site / "nvidia/~-dnn/lib/libcudnn.so.9", "ELF");
  write_text(site / "~file.so", "a file, not a stash: pip stashes files in a temp dir");

  std::vector<fs::path> stashes;
  auto found = scan_site_packages(*venv, &stashes);
  std::vector<std::string> paths;
  paths.reserve(found.size());
  for (const ScannedFile& file : found) paths.push_back(file.path.string());
  EXPECT_EQ(paths, (std::vector<std::string>{(site / "nvidia/cudnn/lib/libcudnn.so.9").string(),
                                             (site / "~file.so").string()}));
  EXPECT_EQ(stashes, (std::vector<fs::path>{site / "nvidia/~-dnn", site / "nvidia/~udnn",
                                            site / "~orch", site / "~orch-2.8.0.dist-info"}));
  // Without the list: the same libraries.
  EXPECT_EQ(scan_site_packages(*venv).size(), found.size());
}

}  // namespace
}  // namespace venvfix::dist
