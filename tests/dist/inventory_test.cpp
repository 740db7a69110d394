#include "venvfix/dist/inventory.hpp"

#include <gtest/gtest.h>

#include "env/test_support.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix::dist {
namespace {

using test_support::write_text;

class DistInventory : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-inv-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(*dir));
    root = m_dir->path() / "venv";
    ASSERT_TRUE(test_support::copy_of_template_venv(root));
    auto venv = env::open_venv_at(root);
    ASSERT_TRUE(venv) << venv.error().message;
    m_venv = std::move(*venv);
    site = m_venv.purelib;
  }

  void add_dist(const fs::path& in_site, std::string_view dir_name, std::string_view metadata,
                std::string_view record, std::string_view installer = "pip\n") {
    fs::path info = in_site / dir_name;
    if (!metadata.empty()) write_text(info / "METADATA", metadata);
    if (!record.empty()) write_text(info / "RECORD", record);
    if (!installer.empty()) write_text(info / "INSTALLER", installer);
    fs::create_directories(info);
  }

  Inventory read() {
    auto venv = env::open_venv_at(root);
    EXPECT_TRUE(venv);
    m_venv = std::move(*venv);
    auto inventory = read_inventory(m_venv);
    EXPECT_TRUE(inventory) << inventory.error().message;
    return std::move(*inventory);
  }

  std::optional<TempDir> m_dir;
  env::Venv m_venv;
  fs::path root;
  fs::path site;
};

TEST_F(DistInventory, ReadsDistInfoAndOwnership) {
  add_dist(site, "Nvidia_CUDNN_cu12-9.10.2.21.dist-info",
           "Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\nVersion: 9.10.2.21\n"
           "Requires-Dist: nvidia-cublas-cu12\n",
           "nvidia/cudnn/lib/libcudnn.so.9,sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0,3\n"
           "nvidia/__init__.py,,\n"
           "Nvidia_CUDNN_cu12-9.10.2.21.dist-info/RECORD,,\n");
  add_dist(site, "nvidia_cudnn_cu13-9.13.0.50.dist-info",
           "Metadata-Version: 2.1\nName: nvidia-cudnn-cu13\nVersion: 9.13.0.50\n",
           "nvidia/cudnn/lib/libcudnn.so.9,sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0,3\n"
           "./nvidia/cudnn/../__init__.py,,\n"
           "../../../bin/cudnn-tool,,\n",
           "uv\n");
  Inventory inventory = read();
  ASSERT_EQ(inventory.distributions.size(), 2u);
  const Distribution* cu12 = inventory.find("NVIDIA_cudnn.CU12");
  ASSERT_NE(cu12, nullptr);
  EXPECT_EQ(cu12->name, "nvidia-cudnn-cu12");
  EXPECT_EQ(cu12->normalized_name, "nvidia-cudnn-cu12");
  EXPECT_EQ(cu12->version, "9.10.2.21");
  EXPECT_EQ(cu12->installer, "pip");
  EXPECT_EQ(cu12->site_packages, site);
  EXPECT_EQ(cu12->metadata_dir, site / "Nvidia_CUDNN_cu12-9.10.2.21.dist-info");
  EXPECT_EQ(cu12->metadata.requires_dist, std::vector<std::string>{"nvidia-cublas-cu12"});
  EXPECT_EQ(cu12->record.size(), 3u);
  EXPECT_FALSE(cu12->legacy_egg_info);
  EXPECT_TRUE(cu12->problems.empty());
  EXPECT_EQ(inventory.find("nvidia-cudnn-cu13")->installer, "uv");
  EXPECT_EQ(inventory.find("absent"), nullptr);

  std::vector<std::size_t> both{0, 1};
  EXPECT_EQ(inventory.owners_of(site / "nvidia/cudnn/lib/libcudnn.so.9"), both);
  EXPECT_EQ(inventory.owners_of(site / "nvidia/__init__.py"), both);  // "./x/../" normalised
  EXPECT_EQ(inventory.owners_of(root / "bin/cudnn-tool"), std::vector<std::size_t>{1});
  EXPECT_EQ(inventory.owners_of(root / "bin/../bin/cudnn-tool"), std::vector<std::size_t>{1});
  EXPECT_TRUE(inventory.owners_of(site / "nvidia/other.so").empty());
}

TEST_F(DistInventory, BrokenMetadataBecomesProblemsNotErrors) {
  add_dist(site, "nometa-1.0.dist-info", "", "nometa/__init__.py,,\n");
  add_dist(site, "norecord-2.0.dist-info", "Name: norecord\nVersion: 2.0\n", "");
  add_dist(site, "badrows-3.0.dist-info", "Name: badrows\nVersion: 3.0\n",
           "ok.py,,\nshort.py\n\xff.py,,\nsize.py,,big\n");
  add_dist(site, "binary-1.0.dist-info", std::string("\0\0\0\xff", 4), std::string("\0,\0", 3));
  add_dist(site, "empty-1.0.dist-info", "Name: empty\nVersion: 1.0\n", "");
  write_text(site / "empty-1.0.dist-info" / "RECORD", "");
  add_dist(site, "other-1.0.dist-info", "Name: different\nVersion: 1.0\n", "x.py,,\n");
  // A file named like a dist-info is not one.
  write_text(site / "stray.dist-info", "not a directory");
  Inventory inventory = read();
  ASSERT_EQ(inventory.distributions.size(), 6u);

  const Distribution* nometa = inventory.find("nometa");
  ASSERT_NE(nometa, nullptr);
  EXPECT_EQ(nometa->version, "1.0");  // from the directory name
  ASSERT_EQ(nometa->problems.size(), 1u);
  EXPECT_NE(nometa->problems[0].find("METADATA"), std::string::npos) << nometa->problems[0];

  const Distribution* norecord = inventory.find("norecord");
  ASSERT_NE(norecord, nullptr);
  ASSERT_EQ(norecord->problems.size(), 1u);
  EXPECT_NE(norecord->problems[0].find("RECORD"), std::string::npos);

  const Distribution* badrows = inventory.find("badrows");
  ASSERT_NE(badrows, nullptr);
  EXPECT_EQ(badrows->record.size(), 3u);  // ok.py, short.py (path only), size.py
  EXPECT_EQ(badrows->problems.size(), 3u);
  for (const auto& problem : badrows->problems) {
    EXPECT_NE(problem.find("badrows-3.0.dist-info/RECORD line"), std::string::npos) << problem;
  }

  const Distribution* binary = inventory.find("binary");
  ASSERT_NE(binary, nullptr);
  EXPECT_TRUE(binary->record.empty());
  EXPECT_GE(binary->problems.size(), 2u);

  EXPECT_EQ(inventory.find("empty")->problems.size(), 1u);
  // Named "other" on disk, "different" inside: listed under its METADATA name, with a note.
  const Distribution* different = inventory.find("different");
  ASSERT_NE(different, nullptr);
  ASSERT_EQ(different->problems.size(), 1u);
  EXPECT_NE(different->problems[0].find("holds the metadata of 'different'"), std::string::npos);

  // The same, as states verify turns into dist-info findings.
  EXPECT_EQ(nometa->metadata_state, MetadataFileState::missing);
  EXPECT_EQ(nometa->record_state, MetadataFileState::ok);
  EXPECT_EQ(norecord->record_state, MetadataFileState::missing);
  EXPECT_EQ(norecord->metadata_state, MetadataFileState::ok);
  EXPECT_EQ(inventory.find("empty")->record_state, MetadataFileState::empty);
  EXPECT_EQ(binary->metadata_state, MetadataFileState::invalid);
  EXPECT_EQ(binary->record_state, MetadataFileState::invalid);
  EXPECT_EQ(badrows->record_state, MetadataFileState::ok);
  EXPECT_EQ(different->directory_name, "other");
  EXPECT_EQ(different->directory_version, "1.0");
}

TEST_F(DistInventory, EmptyMetadataAndPipStashes) {
  add_dist(site, "blank-1.0.dist-info", "", "blank/__init__.py,,\n");
  write_text(site / "blank-1.0.dist-info" / "METADATA", " \n\n");
  // METADATA a directory: it exists, and cannot be read.
  add_dist(site, "odd-1.0.dist-info", "", "odd/__init__.py,,\n");
  fs::create_directories(site / "odd-1.0.dist-info" / "METADATA");
  // pip's uninstall stash of "spare 1.0": not a distribution (pip ignores it as well).
  add_dist(site, "~pare-1.0.dist-info", "Name: spare\nVersion: 1.0\n", "spare/__init__.py,,\n");
  add_dist(site, "~~are-1.0.dist-info", "Name: spare\nVersion: 1.0\n", "spare/__init__.py,,\n");
  Inventory inventory = read();
  ASSERT_EQ(inventory.distributions.size(), 2u);
  EXPECT_EQ(inventory.find("spare"), nullptr);
  ASSERT_NE(inventory.find("blank"), nullptr);
  EXPECT_EQ(inventory.find("blank")->metadata_state, MetadataFileState::empty);
  EXPECT_EQ(inventory.find("blank")->version, "1.0");
  ASSERT_NE(inventory.find("odd"), nullptr);
  EXPECT_EQ(inventory.find("odd")->metadata_state, MetadataFileState::unreadable);
  EXPECT_TRUE(inventory.owners_of(site / "spare/__init__.py").empty());
}

TEST_F(DistInventory, EggInfoIsListedNotTrusted) {
  write_text(site / "legacy-0.5-py3.11.egg-info" / "PKG-INFO", "Name: legacy\nVersion: 0.5\n");
  write_text(site / "legacy-0.5-py3.11.egg-info" / "installed-files.txt", "../legacy.py\n");
  write_text(site / "single_file-1.2.egg-info",
             "Metadata-Version: 1.0\nName: single-file\n"
             "Version: 1.2\n");
  Inventory inventory = read();
  ASSERT_EQ(inventory.distributions.size(), 2u);
  const Distribution* legacy = inventory.find("legacy");
  ASSERT_NE(legacy, nullptr);
  EXPECT_TRUE(legacy->legacy_egg_info);
  EXPECT_TRUE(legacy->record.empty());
  EXPECT_EQ(legacy->version, "0.5");
  const Distribution* single = inventory.find("single-file");
  ASSERT_NE(single, nullptr);
  EXPECT_TRUE(single->legacy_egg_info);
  EXPECT_EQ(single->version, "1.2");
  EXPECT_EQ(inventory.paths.size(), 0u);
}

TEST_F(DistInventory, SortedByNameThenVersion) {
  for (const char* v : {"1.10", "1.9", "1.9.1"}) {
    add_dist(site, fmt::format("zeta-{}.dist-info", v), fmt::format("Name: zeta\nVersion: {}\n", v),
             "z.py,,\n");
  }
  add_dist(site, "Alpha-1.0.dist-info", "Name: Alpha\nVersion: 1.0\n", "a.py,,\n");
  Inventory inventory = read();
  ASSERT_EQ(inventory.distributions.size(), 4u);
  EXPECT_EQ(inventory.distributions[0].normalized_name, "alpha");
  EXPECT_EQ(inventory.distributions[1].version, "1.9");
  EXPECT_EQ(inventory.distributions[2].version, "1.9.1");
  EXPECT_EQ(inventory.distributions[3].version, "1.10");
  EXPECT_EQ(inventory.owners_of(site / "z.py"), (std::vector<std::size_t>{1, 2, 3}));
}

TEST_F(DistInventory, SplitSitePackagesResolveAgainstTheirOwnDirectory) {
  std::string lib = site.parent_path().filename().string();
  fs::remove(root / "lib64");
  fs::path site64 = root / "lib64" / lib / "site-packages";
  fs::create_directories(site64);
  add_dist(site64, "torch-2.8.0.dist-info", "Name: torch\nVersion: 2.8.0\n",
           "torch/lib/libtorch_cuda.so,,\n../../../bin/torchrun,,\n");
  add_dist(site, "nvidia_cudnn_cu12-9.1.dist-info", "Name: nvidia-cudnn-cu12\nVersion: 9.1\n",
           "nvidia/cudnn/lib/libcudnn.so.9,,\n");
  Inventory inventory = read();
  ASSERT_EQ(inventory.distributions.size(), 2u);
  EXPECT_EQ(inventory.find("torch")->site_packages, site64);
  EXPECT_EQ(inventory.owners_of(site64 / "torch/lib/libtorch_cuda.so").size(), 1u);
  EXPECT_TRUE(inventory.owners_of(site / "torch/lib/libtorch_cuda.so").empty());
  EXPECT_EQ(inventory.owners_of(root / "bin/torchrun").size(), 1u);
  EXPECT_EQ(inventory.owners_of(site / "nvidia/cudnn/lib/libcudnn.so.9").size(), 1u);
}

TEST(DistResolveRecordPath, Lexical) {
  EXPECT_EQ(resolve_record_path("/v/lib/python3.12/site-packages", "a/b.py"),
            "/v/lib/python3.12/site-packages/a/b.py");
  EXPECT_EQ(resolve_record_path("/v/lib/python3.12/site-packages", "../../../bin/x"), "/v/bin/x");
  EXPECT_EQ(resolve_record_path("/v/site", "/abs//path/./f"), "/abs/path/f");
  EXPECT_EQ(resolve_record_path("/v", "../../../../x"), "/x");
  EXPECT_EQ(resolve_record_path("/v/", "a//b/"), "/v/a/b");
}

}  // namespace
}  // namespace venvfix::dist
