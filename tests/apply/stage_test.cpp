// Downloading and staging a plan's wheels: the plan's hashes are always checked, wheels unpack
// into the staging directory only, and a refused wheel leaves nothing in the venv.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "fetch/test_server.hpp"
#include "txn/apply_test_support.hpp"
#include "venvfix/apply/stage.hpp"
#include "venvfix/env/venv.hpp"
#include "wheel/wheel_test_support.hpp"

namespace venvfix::apply {
namespace {

using namespace venvfix::txn::testing;
using ::testing::Contains;
using ::testing::HasSubstr;

constexpr const char* k_cudnn = "nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl";
constexpr const char* k_cublas = "nvidia_cublas_cu12-12.8.4.1-py3-none-manylinux_2_27_x86_64.whl";

class Stage : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-stage-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
    m_config.cache_dir = m_dir->path() / "cache";
    m_config.progress = fetch::ProgressMode::off;
    m_config.max_retries = 0;
  }

  // An install action for one of the test world's wheels, as the planner would write it.
  plan::Install world_action(const std::string& dist, const std::string& version,
                             const std::string& file, const std::string& base_url) {
    const fs::path wheel = venvfix::testing::test_world().wheels_dir / file;
    auto digest = sha256_file(wheel);
    EXPECT_TRUE(digest);
    MadeWheel made{wheel, to_hex(*digest), fs::file_size(wheel)};
    return install_action(dist, version, made, base_url + "/" + file);
  }

  // The plan that installs the test world's cuDNN and cuBLAS wheels from `files`.
  plan::Plan cudnn_and_cublas(const std::string& files) {
    plan::Plan plan;
    plan.actions.push_back(world_action("nvidia-cudnn-cu12", "9.10.2.21", k_cudnn, files));
    plan.actions.push_back(world_action("nvidia-cublas-cu12", "12.8.4.1", k_cublas, files));
    return plan;
  }

  // Runs fetch_and_stage for `plan` into `staging` (created) of a fresh minimal venv, with a
  // fresh downloader; a venv that does not open fails the test.
  Result<FetchedAndStaged> stage_in_minimal_venv(const plan::Plan& plan, const fs::path& staging,
                                                 const StageOptions& options = {}) {
    auto venv = env::open_venv_at(minimal_venv(m_dir->path() / "venv"));
    EXPECT_TRUE(venv) << (venv ? "" : venv.error().message);
    if (!venv) return std::move(venv).error();
    fs::create_directories(staging);
    fetch::Downloader downloader(m_config);
    return fetch_and_stage(*venv, plan, downloader, staging, {}, options);
  }

  // The plan's wheels into the download cache, as `venvfix fetch` leaves them.
  Result<std::vector<fetch::DownloadResult>> fetch_into_download_cache(const plan::Plan& plan) {
    std::vector<fetch::DownloadRequest> requests;
    for (const plan::Action& action : plan.actions) {
      const auto& install = std::get<plan::Install>(action);
      requests.push_back({install.url, install.sha256, install.size, install.file, {}, {}});
    }
    return fetch::Downloader(m_config).download_all(requests);
  }

  StageOptions with_unpacked_cache() const {
    StageOptions options;
    options.unpacked_cache = m_dir->path() / "cache" / "unpacked";
    return options;
  }

  std::optional<TempDir> m_dir;
  fetch::FetchConfig m_config;
};

TEST_F(Stage, DownloadsFromTheIndexAndStagesLikePip) {
  auto server = venvfix::testing::IndexServer::start(venvfix::testing::test_world().index_dir);
  const std::string files = "http://127.0.0.1:" + std::to_string(server.port()) + "/files";
  plan::Plan plan;
  plan.actions.push_back(world_action("nvidia-cudnn-cu12", "9.10.2.21", k_cudnn, files));
  plan::Remove removal;
  removal.dist = "nvidia-cublas";
  plan.actions.push_back(removal);
  plan.actions.push_back(world_action("nvidia-cublas-cu12", "12.8.4.1", k_cublas, files));

  fs::path venv_root = venvfix::testing::make_scenario("healthy", m_dir->path());
  auto venv = env::open_venv_at(venv_root);
  ASSERT_TRUE(venv);
  const fs::path staging = m_dir->path() / "staging";
  fs::create_directories(staging);
  fetch::Downloader downloader(m_config);
  auto before = fingerprint(venv_root);
  auto staged = fetch_and_stage(*venv, plan, downloader, staging, {});
  ASSERT_TRUE(staged) << staged.error().message;
  ASSERT_EQ(staged->fetched.size(), 2u);
  EXPECT_EQ(staged->fetched[0].action, 0u);
  EXPECT_EQ(staged->fetched[1].action, 2u);
  EXPECT_FALSE(staged->fetched[0].from_cache);
  ASSERT_EQ(staged->staged.size(), 2u);
  EXPECT_EQ(staged->staged[0].dist, "nvidia-cudnn-cu12");
  EXPECT_EQ(staged->staged[1].version, "12.8.4.1");
  EXPECT_EQ(staged->staged[1].action, 2u);
  // Every file the result lists is in staging, and the venv did not change.
  const std::string site = venv->purelib.lexically_relative(venv->root).generic_string();
  std::vector<std::string> paths;
  for (const StagedWheel& wheel : staged->staged) {
    for (const wheel::InstalledFile& file : wheel.install.files) {
      EXPECT_TRUE(fs::is_regular_file(staging / file.path)) << file.path;
      paths.push_back(file.path);
    }
  }
  EXPECT_THAT(paths, Contains(site + "/nvidia/cudnn/lib/libcudnn.so.9"));
  EXPECT_THAT(paths, Contains(site + "/nvidia_cudnn_cu12-9.10.2.21.dist-info/INSTALLER"));
  auto installer = read_file(staging / site / "nvidia_cudnn_cu12-9.10.2.21.dist-info/INSTALLER");
  ASSERT_TRUE(installer);
  EXPECT_EQ(*installer, "venvfix\n");
  // The staged tree equals what the venv's pip put there (same wheel, same scheme).
  auto pip_bytes = read_file(venv_root / site / "nvidia/cudnn/lib/libcudnn.so.9", 1u << 30);
  auto our_bytes = read_file(staging / site / "nvidia/cudnn/lib/libcudnn.so.9", 1u << 30);
  ASSERT_TRUE(pip_bytes && our_bytes);
  EXPECT_EQ(*pip_bytes, *our_bytes);
  EXPECT_EQ(fingerprint(venv_root), before);

  // A second download is served by the cache.
  const fs::path staging2 = m_dir->path() / "staging2";
  fs::create_directories(staging2);
  auto again = fetch_and_stage(*venv, plan, downloader, staging2, {});
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->fetched[0].from_cache);
  EXPECT_TRUE(again->fetched[1].from_cache);
}

TEST_F(Stage, AWrongHashIsANetworkErrorAndNothingIsCached) {
  auto server = venvfix::testing::IndexServer::start(venvfix::testing::test_world().index_dir);
  const std::string files = "http://127.0.0.1:" + std::to_string(server.port()) + "/files";
  plan::Plan plan;
  plan.actions.push_back(world_action("nvidia-cudnn-cu12", "9.10.2.21", k_cudnn, files));
  std::get<plan::Install>(plan.actions[0]).sha256 = std::string(64, 'a');
  const fs::path staging = m_dir->path() / "staging";
  auto fetched = stage_in_minimal_venv(plan, staging);
  ASSERT_FALSE(fetched);
  EXPECT_EQ(fetched.error().code, ExitCode::network);
  EXPECT_THAT(fetched.error().message, HasSubstr(k_cudnn));
  std::size_t blobs = 0;
  if (fs::exists(m_config.cache_dir / "wheels")) {
    for (const auto& entry : fs::recursive_directory_iterator(m_config.cache_dir / "wheels")) {
      blobs += entry.is_regular_file() ? 1 : 0;
    }
  }
  EXPECT_EQ(blobs, 0u);
  EXPECT_TRUE(fs::is_empty(staging));
}

TEST_F(Stage, AWheelThatIsNotTheActionsIsRefused) {
  fs::path tree = m_dir->path() / "tree";
  write_text(tree / "demo/__init__.py", "x = 1\n");
  MadeWheel wheel = make_wheel(m_dir->path() / "wheels", "demo", "1.0", tree, {"--purelib"});
  plan::Plan plan;
  plan.actions.push_back(install_action("demo", "2.0", wheel, file_url(wheel.path)));
  const fs::path staging = m_dir->path() / "staging";
  auto staged = stage_in_minimal_venv(plan, staging);
  ASSERT_FALSE(staged);
  EXPECT_EQ(staged.error().code, ExitCode::usage);
  EXPECT_THAT(staged.error().message, HasSubstr("demo 2.0"));
  EXPECT_TRUE(fs::is_empty(staging));
}

TEST_F(Stage, AHostileWheelIsRefusedAndStagingStaysEmpty) {
  fs::path tree = m_dir->path() / "tree";
  write_text(tree / "demo/__init__.py", "x = 1\n");
  MadeWheel wheel = make_wheel(m_dir->path() / "wheels", "demo", "1.0", tree,
                               {"--purelib", "--raw", "../../../../escaped.txt=owned"});
  plan::Plan plan;
  plan.actions.push_back(install_action("demo", "1.0", wheel, file_url(wheel.path)));
  const fs::path staging = m_dir->path() / "staging";
  auto staged = stage_in_minimal_venv(plan, staging);
  ASSERT_FALSE(staged);
  EXPECT_EQ(staged.error().code, ExitCode::usage);
  EXPECT_THAT(staged.error().message, HasSubstr("escaped.txt"));
  EXPECT_TRUE(fs::is_empty(staging));
  EXPECT_FALSE(fs::exists(m_dir->path() / "escaped.txt"));
}

TEST_F(Stage, TwoWheelsWritingOnePathAreRefused) {
  fs::path tree = m_dir->path() / "tree";
  write_text(tree / "shared/data.txt", "one\n");
  MadeWheel first = make_wheel(m_dir->path() / "wheels", "first", "1.0", tree, {"--purelib"});
  MadeWheel second = make_wheel(m_dir->path() / "wheels", "second", "1.0", tree, {"--purelib"});
  plan::Plan plan;
  plan.actions.push_back(install_action("first", "1.0", first, file_url(first.path)));
  plan.actions.push_back(install_action("second", "1.0", second, file_url(second.path)));
  const fs::path staging = m_dir->path() / "staging";
  auto staged = stage_in_minimal_venv(plan, staging);
  ASSERT_FALSE(staged);
  EXPECT_THAT(staged.error().message, HasSubstr("shared/data.txt"));
}

TEST_F(Stage, APlanNamingOneWheelFileTwiceIsRefusedBeforeAnyDownload) {
  fs::path tree = m_dir->path() / "tree";
  write_text(tree / "demo/__init__.py", "x = 1\n");
  MadeWheel wheel = make_wheel(m_dir->path() / "wheels", "demo", "1.0", tree, {"--purelib"});
  plan::Plan plan;
  plan.actions.push_back(install_action("demo", "1.0", wheel, file_url(wheel.path)));
  plan.actions.push_back(install_action("demo", "1.0", wheel, file_url(wheel.path)));
  const fs::path staging = m_dir->path() / "staging";
  auto twice = stage_in_minimal_venv(plan, staging);
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, ExitCode::usage);
  EXPECT_THAT(twice.error().message, HasSubstr("twice"));
  EXPECT_FALSE(fs::exists(m_config.cache_dir / "wheels"));
  // A file name that is not a wheel's: refused the same way.
  plan.actions.pop_back();
  std::get<plan::Install>(plan.actions[0]).file = "../demo-1.0-py3-none-any.whl";
  auto bad_name = stage_in_minimal_venv(plan, staging);
  ASSERT_FALSE(bad_name);
  EXPECT_EQ(bad_name.error().code, ExitCode::usage);
  EXPECT_THAT(bad_name.error().message, HasSubstr("not a .whl file name"));
  EXPECT_TRUE(fs::is_empty(staging));
}

TEST_F(Stage, FetchAndStageOverlapsAndStopsAtTheFirstRefusal) {
  auto server = venvfix::testing::IndexServer::start(venvfix::testing::test_world().index_dir);
  const std::string files = "http://127.0.0.1:" + std::to_string(server.port()) + "/files";
  plan::Plan plan = cudnn_and_cublas(files);
  fs::path venv_root = minimal_venv(m_dir->path() / "venv");
  auto venv = env::open_venv_at(venv_root);
  ASSERT_TRUE(venv);
  fs::path staging = m_dir->path() / "staging";
  fs::create_directories(staging);
  fetch::Downloader downloader(m_config);
  auto both = fetch_and_stage(*venv, plan, downloader, staging, [](std::size_t action) {
    return action == 1 ? wheel::Requested::yes : wheel::Requested::no;
  });
  ASSERT_TRUE(both) << both.error().message;
  ASSERT_EQ(both->staged.size(), 2u);
  EXPECT_EQ(both->staged[0].dist, "nvidia-cudnn-cu12");
  EXPECT_EQ(both->staged[1].action, 1u);
  EXPECT_EQ(both->fetched[1].action, 1u);
  const std::string site = venv->purelib.lexically_relative(venv->root).generic_string();
  EXPECT_TRUE(fs::exists(staging / site / "nvidia_cublas_cu12-12.8.4.1.dist-info/REQUESTED"));
  EXPECT_FALSE(fs::exists(staging / site / "nvidia_cudnn_cu12-9.10.2.21.dist-info/REQUESTED"));
  for (const StagedWheel& wheel : both->staged) {
    for (const wheel::InstalledFile& file : wheel.install.files) {
      EXPECT_TRUE(fs::is_regular_file(staging / file.path)) << file.path;
    }
  }

  // A hostile wheel among good ones: refused (usage), nothing of it written.
  fs::path tree = m_dir->path() / "tree";
  write_text(tree / "demo/__init__.py", "x = 1\n");
  MadeWheel hostile = make_wheel(m_dir->path() / "wheels", "demo", "1.0", tree,
                                 {"--purelib", "--raw", "/etc/venvfix-absolute=owned"});
  plan.actions.push_back(install_action("demo", "1.0", hostile, file_url(hostile.path)));
  fs::path staging2 = m_dir->path() / "staging2";
  fs::create_directories(staging2);
  auto refused = fetch_and_stage(*venv, plan, downloader, staging2, {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::usage);
  EXPECT_FALSE(fs::exists("/etc/venvfix-absolute"));

  // A wrong hash: ExitCode::network, whatever was staged before.
  plan.actions.pop_back();
  std::get<plan::Install>(plan.actions[1]).sha256 = std::string(64, 'b');
  fetch::FetchConfig fresh = m_config;
  fresh.cache_dir = m_dir->path() / "cache2";
  fetch::Downloader cold(fresh);
  fs::path staging3 = m_dir->path() / "staging3";
  fs::create_directories(staging3);
  auto mismatch = fetch_and_stage(*venv, plan, cold, staging3, {});
  ASSERT_FALSE(mismatch);
  EXPECT_EQ(mismatch.error().code, ExitCode::network);
}

TEST_F(Stage, UnpackingWhileDownloadingStagesWhatWaitingStages) {
  auto server = venvfix::testing::IndexServer::start(venvfix::testing::test_world().index_dir);
  const std::string files = "http://127.0.0.1:" + std::to_string(server.port()) + "/files";
  const plan::Plan plan = cudnn_and_cublas(files);
  auto venv = env::open_venv_at(minimal_venv(m_dir->path() / "venv"));
  ASSERT_TRUE(venv);
  std::map<WhileDownloading, std::vector<StagedWheel>> staged;
  for (WhileDownloading mode : {WhileDownloading::unpack, WhileDownloading::wait}) {
    const std::string name = mode == WhileDownloading::unpack ? "unpack" : "wait";
    fetch::FetchConfig config = m_config;
    config.cache_dir = m_dir->path() / ("cache-" + name);  // cold: every wheel is downloaded
    fetch::Downloader downloader(config);
    const fs::path staging = m_dir->path() / ("staging-" + name);
    fs::create_directories(staging);
    StageOptions options;
    options.while_downloading = mode;
    auto result = fetch_and_stage(*venv, plan, downloader, staging, {}, options);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_FALSE(fs::exists(m_dir->path() / ("staging-" + name + ".arriving")));
    for (const StagedWheel& wheel : result->staged) {
      for (const wheel::InstalledFile& file : wheel.install.files) {
        auto digest = sha256_file(staging / file.path);
        ASSERT_TRUE(digest) << file.path;
        EXPECT_EQ(*digest, file.sha256) << file.path;
      }
    }
    staged[mode] = std::move(result->staged);
  }
  ASSERT_EQ(staged[WhileDownloading::unpack].size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const wheel::InstallResult& arrived = staged[WhileDownloading::unpack][i].install;
    const wheel::InstallResult& waited = staged[WhileDownloading::wait][i].install;
    // Every library was unpacked as it arrived and renamed into staging, not inflated again.
    EXPECT_GT(arrived.adopted, 0u);
    EXPECT_EQ(waited.adopted, 0u);
    EXPECT_EQ(arrived.record_text, waited.record_text);
    ASSERT_EQ(arrived.files.size(), waited.files.size());
    for (std::size_t f = 0; f < arrived.files.size(); ++f) {
      EXPECT_EQ(arrived.files[f].path, waited.files[f].path);
      EXPECT_EQ(arrived.files[f].mode, waited.files[f].mode) << arrived.files[f].path;
      EXPECT_EQ(arrived.files[f].sha256, waited.files[f].sha256) << arrived.files[f].path;
    }
  }
}

TEST_F(Stage, WithTheUnpackedCacheAWheelIsStreamedAndNoArchiveIsKept) {
  auto server = venvfix::testing::IndexServer::start(venvfix::testing::test_world().index_dir);
  const std::string files = "http://127.0.0.1:" + std::to_string(server.port()) + "/files";
  auto venv = env::open_venv_at(minimal_venv(m_dir->path() / "venv"));
  ASSERT_TRUE(venv);
  StageOptions options;
  options.unpacked_cache = m_dir->path() / "cache" / "unpacked";
  fs::create_directories(m_dir->path() / "staging");
  fetch::Downloader downloader(m_config);
  auto staged = fetch_and_stage(*venv, cudnn_and_cublas(files), downloader,
                                m_dir->path() / "staging", {}, options);
  ASSERT_TRUE(staged) << staged.error().message;
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(staged->fetched[i].streamed);
    EXPECT_TRUE(staged->fetched[i].path.empty());
    EXPECT_GT(staged->staged[i].install.adopted, 0u);
  }
  // No .whl in the download cache; the unpacked cache has both wheels, each entry with its
  // skeleton (the metadata, headers and central directory: far less than the wheel on disk).
  EXPECT_EQ(venvfix::testing::count_files(m_dir->path() / "cache" / "wheels"), 0u);
  for (const char* file : {k_cudnn, k_cublas}) {
    const fs::path wheel = venvfix::testing::test_world().wheels_dir / file;
    const fs::path entry = *options.unpacked_cache / to_hex(*sha256_file(wheel));
    struct stat skeleton {};
    ASSERT_EQ(::stat((entry / "wheel.whl").c_str(), &skeleton), 0) << entry;
    EXPECT_EQ(static_cast<std::uint64_t>(skeleton.st_size), fs::file_size(wheel));
    EXPECT_TRUE(fs::exists(entry / "index")) << entry;
  }
  EXPECT_FALSE(fs::exists(m_dir->path() / "staging.arriving"));
}

// Every wheel staged had members adopted from its arrival, and every staged file has the
// sha256 its RECORD row says.
void expect_staged_as_recorded(const FetchedAndStaged& staged, const fs::path& staging) {
  for (const StagedWheel& wheel : staged.staged) {
    for (const wheel::InstalledFile& file : wheel.install.files) {
      auto digest = sha256_file(staging / file.path);
      ASSERT_TRUE(digest) << file.path;
      EXPECT_EQ(*digest, file.sha256) << file.path;
    }
  }
}

void expect_adopted_as_recorded(const FetchedAndStaged& staged, const fs::path& staging) {
  for (const StagedWheel& wheel : staged.staged) EXPECT_GT(wheel.install.adopted, 0u);
  expect_staged_as_recorded(staged, staging);
}

TEST_F(Stage, AWheelFromAFileUrlIsStreamedAsADownloadIs) {
  // A find-links wheelhouse: the plan's URLs are file:// ones. Their bytes are hashed and
  // unpacked as they are read, as a download's are: no copy in the download cache, every
  // library adopted, and the staged bytes RECORD's.
  const std::string files = "file://" + venvfix::testing::test_world().wheels_dir.string();
  const fs::path staging = m_dir->path() / "staging";
  auto staged = stage_in_minimal_venv(cudnn_and_cublas(files), staging, with_unpacked_cache());
  ASSERT_TRUE(staged) << staged.error().message;
  for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(staged->fetched[i].streamed);
  expect_adopted_as_recorded(*staged, staging);
  EXPECT_EQ(venvfix::testing::count_files(m_dir->path() / "cache" / "wheels"), 0u);
}

TEST_F(Stage, AWheelInTheDownloadCacheIsUnpackedAsItIsRead) {
  // The download cache holds the wheels (`venvfix fetch` put them there): each is read from the
  // cache into its unpacking, as a download's body is, and its members adopted, instead of being
  // staged from the file after all were "downloaded" (apply from the cache was 0.3 s slower than
  // from the index for the real cuDNN and cuBLAS wheels).
  const std::string files = "file://" + venvfix::testing::test_world().wheels_dir.string();
  const plan::Plan plan = cudnn_and_cublas(files);
  ASSERT_TRUE(fetch_into_download_cache(plan));
  const fs::path staging = m_dir->path() / "staging";
  auto staged = stage_in_minimal_venv(plan, staging, with_unpacked_cache());
  ASSERT_TRUE(staged) << staged.error().message;
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(staged->fetched[i].from_cache);
    EXPECT_FALSE(staged->fetched[i].streamed);
  }
  expect_adopted_as_recorded(*staged, staging);
}

TEST_F(Stage, AWheelWhoseCachedCopyIsDamagedIsDownloadedAgainAndStaged) {
  // The cached wheels' last bytes are damaged (their sizes right): each is streamed into its
  // unpacking until the hash disagrees, then downloaded into the cache and staged from there.
  const std::string files = "file://" + venvfix::testing::test_world().wheels_dir.string();
  const plan::Plan plan = cudnn_and_cublas(files);
  auto cached = fetch_into_download_cache(plan);
  ASSERT_TRUE(cached) << cached.error().message;
  for (const fetch::DownloadResult& result : *cached) {
    fs::permissions(result.path, fs::perms::owner_write, fs::perm_options::add);
    std::string bytes = venvfix::testing::read_text(result.path);
    bytes.back() = static_cast<char>(bytes.back() ^ 0x5a);
    venvfix::testing::write_text(result.path, bytes);
  }
  const fs::path staging = m_dir->path() / "staging";
  auto staged = stage_in_minimal_venv(plan, staging, with_unpacked_cache());
  ASSERT_TRUE(staged) << staged.error().message;
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_FALSE(staged->fetched[i].from_cache);
    EXPECT_FALSE(staged->fetched[i].streamed);
    EXPECT_EQ(to_hex(*sha256_file((*cached)[i].path)), (*cached)[i].sha256_hex);
    EXPECT_EQ(staged->staged[i].install.adopted, 0u);  // read from the archive
  }
  expect_staged_as_recorded(*staged, staging);
}

TEST_F(Stage, AStreamedWheelThatCannotBeAdoptedIsReadFromItsArchive) {
  // RECORD's hash differs from the member's bytes: the arrived member is not adopted, the
  // skeleton cannot stand in for the wheel, and the wheel is downloaded again into the cache and
  // refused as the archive refuses it (the same words as without streaming).
  const fs::path www = m_dir->path() / "www";
  const fs::path hostile =
      wheel::testing::test_wheels() / "wrong-hash" / "demo_pkg-1.0-py3-none-any.whl";
  fs::create_directories(www / "files");
  fs::create_directories(www / "simple");
  fs::copy_file(hostile, www / "files" / hostile.filename());
  auto server = venvfix::testing::IndexServer::start(www);
  MadeWheel made{hostile, to_hex(*sha256_file(hostile)), fs::file_size(hostile)};
  plan::Plan plan;
  plan.actions.push_back(install_action("demo-pkg", "1.0", made,
                                        "http://127.0.0.1:" + std::to_string(server.port()) +
                                            "/files/" + hostile.filename().string()));
  auto venv = env::open_venv_at(minimal_venv(m_dir->path() / "venv"));
  ASSERT_TRUE(venv);
  std::map<WhileDownloading, std::string> refusals;
  for (WhileDownloading mode : {WhileDownloading::unpack, WhileDownloading::wait}) {
    const std::string name = mode == WhileDownloading::unpack ? "unpack" : "wait";
    fetch::FetchConfig config = m_config;
    config.cache_dir = m_dir->path() / ("cache-" + name);
    StageOptions options;
    options.while_downloading = mode;
    options.unpacked_cache = config.cache_dir / "unpacked";
    const fs::path staging = m_dir->path() / ("staging-" + name);
    fs::create_directories(staging);
    fetch::Downloader downloader(config);
    auto staged = fetch_and_stage(*venv, plan, downloader, staging, {}, options);
    ASSERT_FALSE(staged) << name;
    refusals[mode] = staged.error().message;
    EXPECT_TRUE(fs::is_empty(staging)) << name;
    // The archive the refusal was read from is in the download cache.
    EXPECT_EQ(venvfix::testing::count_files(config.cache_dir / "wheels"), 1u) << name;
  }
  for (const auto& [mode, refusal] : refusals) {
    EXPECT_THAT(refusal, HasSubstr("member demo_pkg/big.py does not match its sha256 in RECORD"));
  }
}

TEST_F(Stage, ASecondStageOfTheSameWheelsComesFromTheUnpackedCacheWithoutTheIndex) {
  plan::Plan plan;
  fs::path venv_root = minimal_venv(m_dir->path() / "venv");
  auto venv = env::open_venv_at(venv_root);
  ASSERT_TRUE(venv);
  StageOptions options;
  options.unpacked_cache = m_dir->path() / "cache" / "unpacked";
  std::optional<FetchedAndStaged> first;
  {
    auto server = venvfix::testing::IndexServer::start(venvfix::testing::test_world().index_dir);
    const std::string files = "http://127.0.0.1:" + std::to_string(server.port()) + "/files";
    plan.actions.push_back(world_action("nvidia-cudnn-cu12", "9.10.2.21", k_cudnn, files));
    plan.actions.push_back(world_action("nvidia-cublas-cu12", "12.8.4.1", k_cublas, files));
    fs::create_directories(m_dir->path() / "staging1");
    fetch::Downloader downloader(m_config);
    auto staged = fetch_and_stage(*venv, plan, downloader, m_dir->path() / "staging1", {}, options);
    ASSERT_TRUE(staged) << staged.error().message;
    EXPECT_FALSE(staged->fetched[0].from_cache);
    first = std::move(*staged);
  }
  // The index is gone: only the unpacked cache can serve the wheels now.
  fs::create_directories(m_dir->path() / "staging2");
  fs::create_directories(m_dir->path() / "staging3");
  fetch::Downloader downloader(m_config);
  StageOptions copying = options;
  copying.link_mode = wheel::LinkMode::copy;
  auto copied = fetch_and_stage(*venv, plan, downloader, m_dir->path() / "staging3", {}, copying);
  ASSERT_TRUE(copied) << copied.error().message;
  for (const wheel::InstalledFile& file : copied->staged[0].install.files) {
    EXPECT_FALSE(fs::equivalent(m_dir->path() / "staging1" / file.path,
                                m_dir->path() / "staging3" / file.path))
        << file.path << ": --link-mode copy shares no inode";
  }
  auto second = fetch_and_stage(*venv, plan, downloader, m_dir->path() / "staging2", {}, options);
  ASSERT_TRUE(second) << second.error().message;
  ASSERT_EQ(second->staged.size(), 2u);
  for (std::size_t w = 0; w < 2; ++w) {
    EXPECT_TRUE(second->fetched[w].from_cache);
    EXPECT_EQ(second->staged[w].install.record_text, first->staged[w].install.record_text);
    for (const wheel::InstalledFile& file : second->staged[w].install.files) {
      auto a = read_file(m_dir->path() / "staging1" / file.path, 1u << 30);
      auto b = read_file(m_dir->path() / "staging2" / file.path, 1u << 30);
      ASSERT_TRUE(a && b) << file.path;
      EXPECT_EQ(*a, *b) << file.path;
      // Hard links by default (as uv): the second staging holds the first one's inodes, except
      // for the files written for each install (RECORD, INSTALLER, scripts).
      bool generated = file.path.ends_with("/RECORD") || file.path.ends_with("/INSTALLER") ||
                       file.path.starts_with("bin/");
      EXPECT_EQ(fs::equivalent(m_dir->path() / "staging1" / file.path,
                               m_dir->path() / "staging2" / file.path),
                !generated)
          << file.path;
    }
  }
}

}  // namespace
}  // namespace venvfix::apply
