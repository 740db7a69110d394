// The index client against real servers on 127.0.0.1 (tests/servers) and file:// trees.
#include "venvfix/index/client.hpp"

#include <gtest/gtest.h>

#include "fetch/test_server.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/sha256.hpp"

namespace venvfix::index {
namespace {

using testing::k_kib;
using testing::TestServer;
using testing::write_random_file;
using testing::write_text;

struct IndexWorld {
  TempDir dir;
  fs::path root, find_links;
  std::string wheel_hash, metadata_hash;
  std::unique_ptr<TestServer> plain, faults, auth;
};

const char* const k_metadata = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n";

class IndexClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = TempDir::create("venvfix-index-world-");
    ASSERT_TRUE(dir);
    world = new IndexWorld{std::move(*dir), {}, {}, {}, {}, {}, {}, {}};
    IndexWorld& w = *world;
    w.root = w.dir.path() / "www";
    w.find_links = w.dir.path() / "links";
    w.wheel_hash = write_random_file(w.root / "files/demo-1.0-py3-none-any.whl", 64 * k_kib, 7);
    write_text(w.root / "files/demo-1.0-py3-none-any.whl.metadata", k_metadata);
    w.metadata_hash = to_hex(sha256(k_metadata));
    // Index A: HTML with relative links, and JSON (which alone gives sizes).
    write_text(
        w.root / "a/simple/demo/index.html",
        "<html><body><a href=\"../../../files/demo-1.0-py3-none-any.whl#sha256=" + w.wheel_hash +
            "\" data-core-metadata=\"sha256=" + w.metadata_hash +
            "\" data-requires-python=\"&gt;=3.8\">demo-1.0-py3-none-any.whl</a></body></html>");
    write_text(w.root / "a/simple/demo/index.json",
               R"({"meta": {"api-version": "1.1"}, "name": "demo", "files": [
                   {"filename": "demo-1.0-py3-none-any.whl",
                    "url": "/files/demo-1.0-py3-none-any.whl",
                    "hashes": {"sha256": ")" +
                   w.wheel_hash + R"("}, "size": 65536, "core-metadata": {"sha256": ")" +
                   w.metadata_hash + R"("}}]})");
    // Index B also has demo (a later version that must never be used) and has onlyb.
    write_text(w.root / "b/simple/demo/index.html", "<a href=\"demo-9.0-py3-none-any.whl\">x</a>");
    write_text(w.root / "b/simple/onlyb/index.html",
               "<a href=\"onlyb-1.0-py3-none-any.whl\">x</a>");
    write_text(w.root / "badhtml/simple/demo/index.html", "<a href=\"demo-1.0-py3-none-any.whl");
    write_text(w.root / "badjson/simple/demo/index.json", "{\"meta\": {\"api-version\": ");
    write_text(w.root / "links.html",
               "<a href=\"files/demo-1.0-py3-none-any.whl\">x</a>"
               "<a href=\"files/other-1.0-py3-none-any.whl\">x</a>");
    write_text(w.find_links / "demo-2.0-py3-none-any.whl", "wheel bytes");
    write_text(w.find_links / "demo_extra-1.0-py3-none-any.whl", "other project");
    write_text(w.find_links / "demo-2.0.tar.gz", "sdist bytes");
    w.plain = std::make_unique<TestServer>("index_server.py", w.root);
    w.faults = std::make_unique<TestServer>("fault_server.py", w.root);
    w.auth = std::make_unique<TestServer>("index_server.py", w.root,
                                          std::vector<std::string>{"--auth", "bob:hunter2-pw"});
  }
  static void TearDownTestSuite() {
    delete world;
    world = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(world->plain->running() && world->faults->running() && world->auth->running());
    auto dir = TempDir::create("venvfix-index-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(*dir));
  }

  IndexConfig config(std::vector<std::string> index_urls) const {
    IndexConfig c;
    c.index_urls = std::move(index_urls);
    c.cache_dir = m_dir->path() / "cache";
    c.timeout_seconds = 5;
    c.max_retries = 1;
    c.retry_base_delay_seconds = 0.01;
    c.progress = fetch::ProgressMode::off;
    c.netrc_file = m_dir->path() / "no-netrc";
    return c;
  }
  static TestServer& plain() { return *world->plain; }
  static TestServer& faults() { return *world->faults; }

  static IndexWorld* world;
  std::optional<TempDir> m_dir;
};

IndexWorld* IndexClientTest::world = nullptr;

TEST_F(IndexClientTest, PrefersJsonAndResolvesLinksAgainstThePage) {
  IndexClient client(config({plain().url("/a/simple")}));
  auto page = client.project("Demo");
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(page->project, "demo");
  EXPECT_EQ(page->page_url, plain().url("/a/simple/demo/"));
  ASSERT_EQ(page->files.size(), 1u);
  const IndexFile& file = page->files[0];
  EXPECT_EQ(file.size, 65536u);  // only the JSON page says so
  EXPECT_EQ(file.url, plain().url("/files/demo-1.0-py3-none-any.whl"));
  EXPECT_EQ(file.sha256_hex, world->wheel_hash);

  // The file then downloads with its hash checked.
  fetch::DownloadRequest request{file.url, file.sha256_hex, file.size, file.filename, {}, {}};
  auto downloaded = client.downloader().download_all(std::span(&request, 1));
  ASSERT_TRUE(downloaded) << downloaded.error().message;
  EXPECT_EQ((*downloaded)[0].sha256_hex, world->wheel_hash);
}

TEST_F(IndexClientTest, FirstIndexWithTheProjectWins) {
  IndexClient client(config({plain().url("/a/simple/"), plain().url("/b/simple/")}));
  auto demo = client.project("demo");
  ASSERT_TRUE(demo) << demo.error().message;
  ASSERT_EQ(demo->files.size(), 1u);
  EXPECT_EQ(demo->files[0].filename, "demo-1.0-py3-none-any.whl");  // not B's 9.0
  auto onlyb = client.project("onlyb");                             // 404 on A, so B
  ASSERT_TRUE(onlyb) << onlyb.error().message;
  EXPECT_EQ(onlyb->page_url, plain().url("/b/simple/onlyb/"));
  ASSERT_EQ(onlyb->files.size(), 1u);
}

TEST_F(IndexClientTest, ProjectMissingEverywhereIsAnErrorNamingTheIndexes) {
  IndexClient client(config({plain().url("/a/simple/"), plain().url("/b/simple/")}));
  auto page = client.project("no-such-project");
  ASSERT_FALSE(page);
  EXPECT_EQ(page.error().code, ExitCode::network);
  EXPECT_NE(page.error().message.find("no-such-project"), std::string::npos);
  EXPECT_NE(page.error().message.find(plain().url("/b/simple/")), std::string::npos)
      << page.error().message;
}

TEST_F(IndexClientTest, MalformedPagesAreErrorsNamingTheUrl) {
  for (const char* index : {"/badhtml/simple/", "/badjson/simple/"}) {
    IndexClient client(config({plain().url(index), plain().url("/a/simple/")}));
    auto page = client.project("demo");
    ASSERT_FALSE(page) << index;
    EXPECT_EQ(page.error().code, ExitCode::network);
    EXPECT_NE(page.error().message.find(plain().url(index) + "demo/"), std::string::npos)
        << page.error().message;
    EXPECT_NE(page.error().message.find("malformed"), std::string::npos) << page.error().message;
  }
}

TEST_F(IndexClientTest, AFailingIndexIsNotSkipped) {
  // A 5xx (after retries) must not let the next index answer for the project.
  std::string broken = faults().url("/fault/500/99/a/simple/");
  IndexClient client(config({broken, plain().url("/b/simple/")}));
  auto page = client.project("demo");
  ASSERT_FALSE(page);
  EXPECT_EQ(page.error().code, ExitCode::network);
  EXPECT_NE(page.error().message.find(broken + "demo/"), std::string::npos) << page.error().message;
}

TEST_F(IndexClientTest, RedirectedPagesResolveLinksAgainstTheirFinalUrl) {
  IndexConfig c =
      config({faults().url("/redirect/" + std::to_string(plain().port()) + "/b/simple/")});
  IndexClient client(c);
  auto page = client.project("demo");
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(page->page_url, plain().url("/b/simple/demo/"));
  ASSERT_EQ(page->files.size(), 1u);
  EXPECT_EQ(page->files[0].url, plain().url("/b/simple/demo/demo-9.0-py3-none-any.whl"));
}

TEST_F(IndexClientTest, FileIndexAndFindLinksDirectory) {
  IndexConfig c = config({"file://" + (world->root / "a/simple").string()});
  c.find_links = {world->find_links.string()};
  IndexClient client(c);
  auto page = client.project("demo");
  ASSERT_TRUE(page) << page.error().message;
  std::vector<std::string> names;
  for (const IndexFile& file : page->files) names.push_back(file.filename);
  EXPECT_EQ(names, (std::vector<std::string>{"demo-1.0-py3-none-any.whl",
                                             "demo-2.0-py3-none-any.whl", "demo-2.0.tar.gz"}));
  // The file:// index's link is resolved inside the tree and downloads like any other.
  EXPECT_EQ(page->files[0].url,
            "file://" + (world->root / "files/demo-1.0-py3-none-any.whl").string());
  fetch::DownloadRequest request{
      page->files[0].url, page->files[0].sha256_hex, std::nullopt, "", {}, {}};
  ASSERT_TRUE(client.downloader().download_all(std::span(&request, 1)));
}

TEST_F(IndexClientTest, FindLinksPageOverHttp) {
  IndexConfig c = config({plain().url("/b/simple/")});
  c.find_links = {plain().url("/links.html")};
  IndexClient client(c);
  auto other = client.project("other");  // on no index, only in the find-links page
  ASSERT_TRUE(other) << other.error().message;
  ASSERT_EQ(other->files.size(), 1u);
  EXPECT_EQ(other->files[0].url, plain().url("/files/other-1.0-py3-none-any.whl"));
}

TEST_F(IndexClientTest, OfflineUsesOnlyFindLinks) {
  IndexConfig c = config({plain().url("/a/simple/")});
  c.offline = true;
  IndexClient without_links(c);
  auto missing = without_links.project("demo");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("offline"), std::string::npos) << missing.error().message;
  c.find_links = {world->find_links.string()};
  IndexClient with_links(c);
  auto page = with_links.project("demo");
  ASSERT_TRUE(page) << page.error().message;
  EXPECT_EQ(page->files.size(), 2u);
}

TEST_F(IndexClientTest, CoreMetadataIsFetchedAndHashChecked) {
  IndexClient client(config({plain().url("/a/simple/")}));
  auto page = client.project("demo");
  ASSERT_TRUE(page);
  auto metadata = client.core_metadata(page->files[0]);
  ASSERT_TRUE(metadata) << metadata.error().message;
  EXPECT_EQ(*metadata, k_metadata);

  IndexFile tampered = page->files[0];
  tampered.core_metadata_sha256 = std::string(64, '0');
  auto rejected = client.core_metadata(tampered);
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().code, ExitCode::network);
  EXPECT_NE(rejected.error().message.find(".metadata"), std::string::npos);
  tampered.has_core_metadata = false;
  EXPECT_FALSE(client.core_metadata(tampered));
}

TEST_F(IndexClientTest, IndexCredentialsReachFilesButNoMessage) {
  std::string index =
      "http://bob:hunter2-pw@127.0.0.1:" + std::to_string(world->auth->port()) + "/a/simple/";
  IndexClient client(config({index}));
  auto page = client.project("demo");
  ASSERT_TRUE(page) << page.error().message;
  // An absolute-path link on the same host gets the index's credentials for the download.
  fetch::DownloadRequest request{
      page->files[0].url, page->files[0].sha256_hex, std::nullopt, "", {}, {}};
  auto downloaded = client.downloader().download_all(std::span(&request, 1));
  ASSERT_TRUE(downloaded) << downloaded.error().message;
  auto missing = client.project("absent");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message.find("hunter2"), std::string::npos) << missing.error().message;

  // Without credentials the index refuses, and the error says how to give them.
  IndexClient anonymous(config({world->auth->url("/a/simple/")}));
  auto refused = anonymous.project("demo");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::network);
  EXPECT_NE(refused.error().message.find("HTTP 401"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("netrc"), std::string::npos) << refused.error().message;
}

TEST(IndexConfigTest, ReadsTheEnvironmentLikePipAndUv) {
  std::map<std::string, std::string> env = {
      {"PIP_INDEX_URL", "https://mirror.example/simple"},
      {"UV_INDEX_URL", "https://ignored.example/simple"},
      {"PIP_EXTRA_INDEX_URL", " https://extra1.example/simple\nhttps://extra2.example/simple "},
      {"PIP_FIND_LINKS", "/srv/wheels"},
      {"UV_OFFLINE", "1"},
      {"PIP_DEFAULT_TIMEOUT", "12.5"},
      {"XDG_CACHE_HOME", "/var/cache/me"},
      {"SSL_CERT_FILE", "/etc/ca.pem"},
      {"NETRC", "/home/me/.netrc-ci"},
  };
  auto lookup = [&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  IndexConfig c = IndexConfig::from_environment(lookup);
  EXPECT_EQ(c.index_urls, (std::vector<std::string>{"https://mirror.example/simple",
                                                    "https://extra1.example/simple",
                                                    "https://extra2.example/simple"}));
  EXPECT_EQ(c.find_links, (std::vector<std::string>{"/srv/wheels"}));
  EXPECT_TRUE(c.offline);
  EXPECT_DOUBLE_EQ(c.timeout_seconds, 12.5);
  EXPECT_EQ(c.cache_dir, fs::path("/var/cache/me/venvfix"));
  EXPECT_EQ(c.ca_cert, fs::path("/etc/ca.pem"));
  EXPECT_EQ(c.netrc_file, fs::path("/home/me/.netrc-ci"));

  env = {{"VENVFIX_INDEX_URL", "https://first.example/simple"},
         {"PIP_INDEX_URL", "https://second.example/simple"},
         {"HOME", "/home/me"},
         {"PIP_TIMEOUT", "not a number"}};
  c = IndexConfig::from_environment(lookup);
  EXPECT_EQ(c.index_urls, (std::vector<std::string>{"https://first.example/simple"}));
  EXPECT_EQ(c.cache_dir, fs::path("/home/me/.cache/venvfix"));
  EXPECT_DOUBLE_EQ(c.timeout_seconds, 30);
  EXPECT_FALSE(c.offline);

  env = {};
  c = IndexConfig::from_environment(lookup);
  EXPECT_EQ(c.index_urls, (std::vector<std::string>{"https://pypi.org/simple"}));
}

TEST(IndexFindLinks, MatchesFilesToProjects) {
  EXPECT_TRUE(file_belongs_to("nvidia_cudnn_cu12-9.1-py3-none-manylinux_2_27_x86_64.whl",
                              "nvidia-cudnn-cu12"));
  EXPECT_FALSE(file_belongs_to("demo_extra-1.0-py3-none-any.whl", "demo"));
  EXPECT_TRUE(file_belongs_to("my-project-1.0.tar.gz", "my-project"));
  EXPECT_FALSE(file_belongs_to("my-project-1.0.tar.gz", "my"));
  EXPECT_TRUE(file_belongs_to("My.Project-2.tar.gz", "my-project"));
}

}  // namespace
}  // namespace venvfix::index
