// The downloader against real servers on 127.0.0.1: the static index server and the
// fault-injecting one (tests/servers). One scenario per fault; every failure must name the
// URL, carry ExitCode::network and leave nothing but complete blobs in the cache.
#include "venvfix/fetch/downloader.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <new>
#include <system_error>
#include <thread>

#include <gtest/gtest.h>

#include "fetch/test_server.hpp"
#include "support/threads_refused.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix::fetch {
namespace {

using testing::count_files;
using testing::k_kib;
using testing::TestServer;
using testing::write_random_file;

// Servers start once per suite (an interpreter takes a while on a loaded machine); every test
// gets its own cache and uses URLs no other test uses, so the fault counters never collide.
struct World {
  TempDir dir;
  fs::path root, log, cert, key;
  std::string small_hash, big_hash;
  std::unique_ptr<TestServer> plain, faults, auth, tls;
};

class FetchDownloader : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = TempDir::create("venvfix-fetch-world-");
    ASSERT_TRUE(dir);
    world = new World{std::move(*dir), {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
    World& w = *world;
    w.root = w.dir.path() / "www";
    w.log = w.dir.path() / "requests.log";
    w.cert = w.dir.path() / "cert.pem";
    w.key = w.dir.path() / "key.pem";
    w.small_hash = write_random_file(w.root / "files/small.bin", 300 * k_kib, 1);
    w.big_hash = write_random_file(w.root / "files/big.bin", 3 * k_kib * k_kib, 2);
    for (unsigned i = 0; i < 8; ++i) {
      write_random_file(w.root / "many" / (std::to_string(i) + ".whl"), (200 + 50 * i) * k_kib,
                        10 + i);
    }
    std::string command =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1"
        " -addext subjectAltName=IP:127.0.0.1 -keyout " +
        w.key.string() + " -out " + w.cert.string() + " 2>/dev/null";
    ASSERT_EQ(std::system(command.c_str()), 0);
    w.plain = std::make_unique<TestServer>("index_server.py", w.root,
                                           std::vector<std::string>{"--log", w.log.string()});
    w.faults = std::make_unique<TestServer>("fault_server.py", w.root,
                                            std::vector<std::string>{"--log", w.log.string()});
    w.auth = std::make_unique<TestServer>("index_server.py", w.root,
                                          std::vector<std::string>{"--auth", "alice:s3cret-pw"});
    w.tls = std::make_unique<TestServer>(
        "index_server.py", w.root,
        std::vector<std::string>{"--tls-cert", w.cert.string(), "--tls-key", w.key.string()});
  }
  static void TearDownTestSuite() {
    delete world;
    world = nullptr;
  }

  void SetUp() override {
    ASSERT_TRUE(world->plain->running() && world->faults->running() && world->auth->running() &&
                world->tls->running());
    auto dir = TempDir::create("venvfix-fetch-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(*dir));
    cache = m_dir->path() / "cache";
    root = world->root;
    small_hash = world->small_hash;
    big_hash = world->big_hash;
  }

  FetchConfig config() const {
    FetchConfig c;
    c.cache_dir = cache;
    c.timeout_seconds = 5;
    c.retry_base_delay_seconds = 0.02;
    c.max_retries = 3;
    c.progress = ProgressMode::off;
    c.netrc_file = m_dir->path() / "no-netrc";
    return c;
  }

  // Logged requests whose path contains `needle`.
  static std::vector<std::string> logged_requests(std::string_view needle) {
    std::vector<std::string> lines;
    std::string text = testing::read_text(world->log);
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      std::string line = text.substr(start, end - start);
      if (line.find(needle) != std::string::npos) lines.push_back(line);
      if (end == std::string::npos) break;
      start = end + 1;
    }
    return lines;
  }

  // The cache holds exactly `blobs` complete files and no temporary file.
  void expect_cache_clean(std::size_t blobs) const {
    EXPECT_EQ(count_files(cache / "tmp"), 0u);
    EXPECT_EQ(count_files(cache / "wheels"), blobs);
  }

  static void expect_network_error(const Result<std::vector<DownloadResult>>& result,
                                   const std::string& url_fragment, const std::string& words) {
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, ExitCode::network);
    EXPECT_NE(result.error().message.find(url_fragment), std::string::npos)
        << result.error().message;
    EXPECT_NE(result.error().message.find(words), std::string::npos) << result.error().message;
  }

  static TestServer& plain() { return *world->plain; }
  static TestServer& faults() { return *world->faults; }

  static World* world;
  std::optional<TempDir> m_dir;
  fs::path root, cache;
  std::string small_hash, big_hash;
};

World* FetchDownloader::world = nullptr;

TEST_F(FetchDownloader, DownloadsInParallelAndSecondRunUsesTheCache) {
  std::vector<DownloadRequest> requests;
  for (unsigned i = 0; i < 8; ++i) {
    // Half with the index's hash, half without (the computed digest names the blob).
    fs::path file = root / "many" / (std::to_string(i) + ".whl");
    DownloadRequest request{
        plain().url("/many/" + std::to_string(i) + ".whl"), std::nullopt, std::nullopt, "", {}, {}};
    if (i % 2 == 0) request.sha256_hex = to_hex(*sha256_file(file));
    requests.push_back(request);
  }
  auto first = Downloader(config()).download_all(requests);
  ASSERT_TRUE(first) << first.error().message;
  for (unsigned i = 0; i < 8; ++i) {
    fs::path file = root / "many" / (std::to_string(i) + ".whl");
    EXPECT_EQ((*first)[i].sha256_hex, to_hex(*sha256_file(file)));
    EXPECT_FALSE((*first)[i].from_cache);
    EXPECT_EQ((*first)[i].size, (200 + 50 * i) * 1024u);
    EXPECT_EQ(to_hex(*sha256_file((*first)[i].path)), (*first)[i].sha256_hex);
  }
  expect_cache_clean(8);
  EXPECT_EQ(logged_requests("/many/").size(), 8u);

  auto second = Downloader(config()).download_all(requests);
  ASSERT_TRUE(second) << second.error().message;
  for (const DownloadResult& result : *second) EXPECT_TRUE(result.from_cache);
  EXPECT_EQ(logged_requests("/many/").size(), 8u);  // nothing downloaded
}

TEST_F(FetchDownloader, RetriesServerErrors) {
  std::string path = "/fault/500/2/files/small.bin";
  std::vector<DownloadRequest> requests = {
      {faults().url(path), small_hash, std::nullopt, "", {}, {}}};
  auto result = Downloader(config()).download_all(requests);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(logged_requests(path).size(), 3u);
  expect_cache_clean(1);
}

TEST_F(FetchDownloader, GivesUpAfterTheLastRetry) {
  std::string url = faults().url("/fault/500/99/files/small.bin");
  std::vector<DownloadRequest> requests = {{url, small_hash, std::nullopt, "", {}, {}}};
  auto result = Downloader(config()).download_all(requests);
  expect_network_error(result, url, "HTTP 500");
  EXPECT_NE(result.error().message.find("4 attempts"), std::string::npos) << result.error().message;
  expect_cache_clean(0);
}

TEST_F(FetchDownloader, HonoursRetryAfter) {
  std::vector<DownloadRequest> requests = {
      {faults().url("/fault/429/1/files/small.bin"), small_hash, std::nullopt, "", {}, {}}};
  auto start = std::chrono::steady_clock::now();
  auto result = Downloader(config()).download_all(requests);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_GE(elapsed, 0.95);  // Retry-After: 1, although the back-off alone would be 20 ms
  expect_cache_clean(1);
}

TEST_F(FetchDownloader, ResumesWithRangeAfterAConnectionReset) {
  std::string path = "/fault/reset/1/files/big.bin";
  std::vector<DownloadRequest> requests = {
      {faults().url(path), big_hash, 3u * 1024 * 1024, "", {}, {}}};
  auto result = Downloader(config()).download_all(requests);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ((*result)[0].sha256_hex, big_hash);
  std::vector<std::string> lines = logged_requests(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("\"range\": null"), std::string::npos) << lines[0];
  // The second request asks only for the rest, guarded by the first response's ETag.
  EXPECT_NE(lines[1].find("\"range\": \"bytes="), std::string::npos) << lines[1];
  EXPECT_EQ(lines[1].find("\"range\": \"bytes=0-"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("\"if_range\": \"\\\""), std::string::npos) << lines[1];
  expect_cache_clean(1);
}

TEST_F(FetchDownloader, StartsOverWhenTheServerIgnoresRange) {
  std::string path = "/fault/shortnorange/1/files/big.bin";
  std::vector<DownloadRequest> requests = {
      {faults().url(path), big_hash, std::nullopt, "", {}, {}}};
  auto result = Downloader(config()).download_all(requests);
  ASSERT_TRUE(result) << result.error().message;  // the hash of the restarted stream is right
  EXPECT_EQ((*result)[0].size, 3u * 1024 * 1024);
  std::vector<std::string> lines = logged_requests(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("\"range\": \"bytes="), std::string::npos) << lines[1];
  expect_cache_clean(1);
}

TEST_F(FetchDownloader, ShortBodyFailsAndLeavesNothing) {
  std::string url = faults().url("/fault/short/99/files/big.bin");
  std::vector<DownloadRequest> requests = {{url, big_hash, std::nullopt, "", {}, {}}};
  FetchConfig c = config();
  c.max_retries = 1;
  auto result = Downloader(c).download_all(requests);
  expect_network_error(result, url, "fewer bytes than it announced");
  expect_cache_clean(0);
}

TEST_F(FetchDownloader, StalledServerHitsTheLowSpeedTimeout) {
  std::string url = faults().url("/fault/stall/99/files/big.bin");
  std::vector<DownloadRequest> requests = {{url, big_hash, std::nullopt, "", {}, {}}};
  FetchConfig c = config();
  c.timeout_seconds = 1;
  c.max_retries = 0;
  auto start = std::chrono::steady_clock::now();
  auto result = Downloader(c).download_all(requests);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  expect_network_error(result, url, "stalled");
  EXPECT_LT(elapsed, 5.0);
  expect_cache_clean(0);
}

TEST_F(FetchDownloader, FollowsARedirectToAnotherPort) {
  std::string target = "/files/small.bin?redirected";
  std::string url = faults().url("/redirect/" + std::to_string(plain().port()) + target);
  std::vector<DownloadRequest> requests = {{url, small_hash, std::nullopt, "", {}, {}}};
  auto result = Downloader(config()).download_all(requests);
  ASSERT_TRUE(result) << result.error().message;
  std::vector<std::string> lines = logged_requests(target);
  ASSERT_EQ(lines.size(), 2u);  // the redirect, then the other server
}

TEST_F(FetchDownloader, BasicAuthWorksWithNetrcAndFailsClearlyWithout) {
  std::string url = world->auth->url("/files/small.bin");
  std::vector<DownloadRequest> requests = {{url, small_hash, std::nullopt, "", {}, {}}};
  FetchConfig c = config();
  auto refused = Downloader(c).download_all(requests);
  expect_network_error(refused, url, "HTTP 401");
  expect_cache_clean(0);

  fs::path netrc = m_dir->path() / "netrc";
  testing::write_text(netrc, "machine 127.0.0.1 login alice password s3cret-pw\n");
  c.netrc_file = netrc;
  auto accepted = Downloader(c).download_all(requests);
  ASSERT_TRUE(accepted) << accepted.error().message;
}

TEST_F(FetchDownloader, CredentialsInTheUrlWorkAndNeverAppearInMessages) {
  std::string base = "http://alice:s3cret-pw@127.0.0.1:" + std::to_string(world->auth->port());
  std::vector<DownloadRequest> good = {
      {base + "/files/small.bin", small_hash, std::nullopt, "", {}, {}}};
  auto accepted = Downloader(config()).download_all(good);
  ASSERT_TRUE(accepted) << accepted.error().message;
  std::vector<DownloadRequest> missing = {
      {base + "/files/missing.bin", std::nullopt, std::nullopt, "", {}, {}}};
  auto refused = Downloader(config()).download_all(missing);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message.find("s3cret"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("127.0.0.1"), std::string::npos);
  EXPECT_NE(refused.error().message.find("HTTP 404"), std::string::npos);
}

TEST_F(FetchDownloader, WrongBytesForTheListedHashAreRejected) {
  std::string url = faults().url("/fault/corrupt/99/files/small.bin");
  std::vector<DownloadRequest> requests = {{url, small_hash, std::nullopt, "", {}, {}}};
  auto result = Downloader(config()).download_all(requests);
  expect_network_error(result, url, small_hash);  // the expected digest
  EXPECT_NE(result.error().message.find("discarded"), std::string::npos);
  expect_cache_clean(0);
}

TEST_F(FetchDownloader, NotFoundIsAnError) {
  std::string url = plain().url("/files/nope.whl");
  std::vector<DownloadRequest> requests = {
      {url, small_hash, std::nullopt, "", {}, {}},
      {plain().url("/files/big.bin?not-found-test"), big_hash, std::nullopt, "", {}, {}}};
  auto result = Downloader(config()).download_all(requests);
  expect_network_error(result, url, "HTTP 404");
  EXPECT_EQ(count_files(cache / "tmp"), 0u);
}

TEST_F(FetchDownloader, HttpsNeedsTheTestCa) {
  std::string url = "https://127.0.0.1:" + std::to_string(world->tls->port()) + "/files/small.bin";
  std::vector<DownloadRequest> requests = {{url, small_hash, std::nullopt, "", {}, {}}};
  auto refused = Downloader(config()).download_all(requests);
  expect_network_error(refused, url, "certificate");
  expect_cache_clean(0);

  FetchConfig c = config();
  c.ca_cert = world->cert;
  auto accepted = Downloader(c).download_all(requests);
  ASSERT_TRUE(accepted) << accepted.error().message;
  EXPECT_EQ((*accepted)[0].sha256_hex, small_hash);
}

TEST_F(FetchDownloader, OfflineUsesOnlyTheCacheAndNamesWhatIsMissing) {
  std::vector<DownloadRequest> requests = {
      {plain().url("/files/small.bin"), small_hash, std::nullopt, "small.bin", {}, {}},
      {plain().url("/files/big.bin"), std::nullopt, std::nullopt, "big.bin", {}, {}}};
  FetchConfig offline = config();
  offline.offline = true;
  auto missing = Downloader(offline).download_all(requests);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ExitCode::network);
  EXPECT_NE(missing.error().message.find("2 files are not in the cache"), std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().message.find("big.bin"), std::string::npos);

  ASSERT_TRUE(Downloader(config()).download_all(requests));
  auto cached = Downloader(offline).download_all(requests);
  ASSERT_TRUE(cached) << cached.error().message;
  EXPECT_TRUE((*cached)[0].from_cache && (*cached)[1].from_cache);  // by hash and by URL
}

// Offline still reaches the find-links locations the user named (a fleet's wheelhouse): a URL
// under a reachable prefix is downloaded, any other is refused as before.
TEST_F(FetchDownloader, OfflineReachesOnlyTheNamedWheelhouse) {
  std::vector<DownloadRequest> requests = {
      {plain().url("/files/small.bin"), small_hash, std::nullopt, "small.bin", {}, {}}};
  FetchConfig offline = config();
  offline.offline = true;
  offline.reachable_offline = {plain().url("/many/")};
  const std::size_t requested_before = logged_requests("/files/small.bin").size();
  auto refused = Downloader(offline).download_all(requests);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("not in the cache"), std::string::npos);
  EXPECT_EQ(logged_requests("/files/small.bin").size(), requested_before);

  offline.reachable_offline = {plain().url("/files/")};
  auto fetched = Downloader(offline).download_all(requests);
  ASSERT_TRUE(fetched) << fetched.error().message;
  EXPECT_FALSE((*fetched)[0].from_cache);
  EXPECT_EQ((*fetched)[0].sha256_hex, small_hash);
}

TEST(FetchOffline, APrefixCoversAUrlWhateverItsCredentials) {
  FetchConfig c;
  EXPECT_FALSE(blocked_offline(c, "https://pypi.org/simple/torch/"));  // online: nothing blocked
  c.offline = true;
  c.reachable_offline = {"http://127.0.0.1:8080/wheels/"};
  EXPECT_TRUE(blocked_offline(c, "https://pypi.org/simple/torch/"));
  EXPECT_FALSE(blocked_offline(c, "http://127.0.0.1:8080/wheels/a-1.0-py3-none-any.whl"));
  EXPECT_FALSE(blocked_offline(c, "http://user:pw@127.0.0.1:8080/wheels/index.html"));
  EXPECT_TRUE(blocked_offline(c, "http://127.0.0.1:8080/other/a.whl"));
  EXPECT_TRUE(blocked_offline(c, "http://127.0.0.1:80800/wheels/a.whl"));
  c.reachable_offline = {"http://token@127.0.0.1:8080/wheels/"};
  EXPECT_FALSE(blocked_offline(c, "http://127.0.0.1:8080/wheels/a.whl"));
}

TEST_F(FetchDownloader, DamagedCacheEntryIsDownloadedAgain) {
  std::vector<DownloadRequest> requests = {
      {plain().url("/files/small.bin"), small_hash, std::nullopt, "", {}, {}}};
  auto first = Downloader(config()).download_all(requests);
  ASSERT_TRUE(first);
  fs::path blob = (*first)[0].path;
  fs::permissions(blob, fs::perms::owner_write, fs::perm_options::add);
  testing::write_text(blob, "damaged");
  auto second = Downloader(config()).download_all(requests);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_FALSE((*second)[0].from_cache);
  EXPECT_EQ(to_hex(*sha256_file(blob)), small_hash);
}

TEST_F(FetchDownloader, FileUrlsAreCopiedIntoTheCacheAndChecked) {
  std::string url = "file://" + (root / "files/small.bin").string();
  std::vector<DownloadRequest> good = {{url, small_hash, std::nullopt, "", {}, {}}};
  auto result = Downloader(config()).download_all(good);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE((*result)[0].path.string().starts_with(cache.string()));
  std::vector<DownloadRequest> bad = {{url, big_hash, std::nullopt, "", {}, {}}};
  auto rejected = Downloader(config()).download_all(bad);
  ASSERT_FALSE(rejected);
  EXPECT_EQ(rejected.error().code, ExitCode::network);
  expect_cache_clean(1);
}

TEST_F(FetchDownloader, ConcurrentProcessesShareTheCache) {
  std::vector<DownloadRequest> requests = {
      {plain().url("/files/small.bin"), small_hash, std::nullopt, "", {}, {}},
      {plain().url("/files/big.bin"), big_hash, std::nullopt, "", {}, {}}};
  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto result = Downloader(config()).download_all(requests);
      bool good = result && to_hex(*sha256_file((*result)[1].path)) == big_hash;
      ::_exit(good ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  expect_cache_clean(2);
}

TEST_F(FetchDownloader, PrintsAOneLineSummary) {
  std::vector<DownloadRequest> requests = {
      {plain().url("/files/small.bin"), small_hash, std::nullopt, "", {}, {}}};
  FetchConfig c = config();
  c.progress = ProgressMode::automatic;
  ::testing::internal::CaptureStderr();
  auto result = Downloader(c).download_all(requests);
  std::string printed = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(result);
  EXPECT_NE(printed.find("Downloaded 1 file (300.0 KiB)"), std::string::npos) << printed;
  EXPECT_EQ(printed.find('\x1b'), std::string::npos);  // not a terminal: no redrawing

  c.progress = ProgressMode::off;
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(Downloader(c).download_all(requests));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST_F(FetchDownloader, GetReturnsStatusAndNegotiatesContent) {
  testing::write_text(root / "simple/demo/index.html", "<a href='x'>x</a>");
  testing::write_text(root / "simple/demo/index.json", "{}");
  Downloader downloader(config());
  auto json = downloader.get(plain().url("/simple/demo/"), {"application/vnd.pypi.simple.v1+json"});
  ASSERT_TRUE(json) << json.error().message;
  EXPECT_EQ(json->status, 200);
  EXPECT_EQ(json->body, "{}");
  EXPECT_EQ(json->content_type, "application/vnd.pypi.simple.v1+json");
  auto html = downloader.get(plain().url("/simple/demo"), {"text/html"});
  ASSERT_TRUE(html);
  EXPECT_EQ(html->body, "<a href='x'>x</a>");
  EXPECT_EQ(html->effective_url, plain().url("/simple/demo/"));  // after the redirect
  auto missing = downloader.get(plain().url("/simple/none/"), {"text/html"});
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  auto text = downloader.fetch_text(plain().url("/simple/none/"), {});
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, ExitCode::network);
}

// download_each: every request reported once, as soon as its file is in the cache, so the
// caller can work on it while the others download.
TEST_F(FetchDownloader, DownloadEachReportsEveryRequestOnceAsItCompletes) {
  std::vector<DownloadRequest> requests;
  for (unsigned i = 0; i < 6; ++i) {
    fs::path file = root / "many" / (std::to_string(i) + ".whl");
    requests.push_back({plain().url("/many/" + std::to_string(i) + ".whl"),
                        to_hex(*sha256_file(file)),
                        std::nullopt,
                        "",
                        {},
                        {}});
  }
  // Request 6 repeats request 2; request 0 is already in the cache.
  requests.push_back(requests[2]);
  ASSERT_TRUE(Downloader(config()).download_all(std::span(requests).first(1)));

  std::vector<std::size_t> order;
  auto result = Downloader(config()).download_each(
      requests, [&](std::size_t i, const DownloadResult& done) -> Status {
        order.push_back(i);
        // The blob is complete and checked when reported.
        EXPECT_EQ(to_hex(*sha256_file(done.path)), *requests[i].sha256_hex) << i;
        EXPECT_EQ(done.from_cache, i == 0) << i;
        return ok();
      });
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(order.size(), requests.size());
  auto at = [&](std::size_t i) { return std::find(order.begin(), order.end(), i) - order.begin(); };
  EXPECT_EQ(at(6), at(2) + 1);  // the duplicate right after its first
  std::vector<std::size_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], i);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ((*result)[i].sha256_hex, *requests[i].sha256_hex);
  }
  expect_cache_clean(6);
}

TEST_F(FetchDownloader, DownloadEachReportsFastFilesBeforeASlowOneFinishes) {
  // The first request is answered 429 with Retry-After: 1; the others come at once and are
  // reported while it waits.
  std::vector<DownloadRequest> requests = {
      {faults().url("/fault/429/1/many/7.whl"), std::nullopt, std::nullopt, "", {}, {}},
      {plain().url("/many/5.whl"), std::nullopt, std::nullopt, "", {}, {}},
      {plain().url("/many/6.whl"), std::nullopt, std::nullopt, "", {}, {}}};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::pair<std::size_t, double>> reports;
  auto result = Downloader(config()).download_each(
      requests, [&](std::size_t i, const DownloadResult&) -> Status {
        reports.emplace_back(
            i, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        return ok();
      });
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports.back().first, 0u);
  EXPECT_GE(reports.back().second, 0.95);
  EXPECT_LT(reports[0].second, reports.back().second);
  EXPECT_LT(reports[1].second, reports.back().second);
}

TEST_F(FetchDownloader, DownloadEachStopsAtTheCallersError) {
  std::vector<DownloadRequest> requests = {
      {plain().url("/files/small.bin"), small_hash, std::nullopt, "", {}, {}},
      {faults().url("/fault/stall/99/files/big.bin?each"), big_hash, std::nullopt, "", {}, {}}};
  auto start = std::chrono::steady_clock::now();
  auto result = Downloader(config()).download_each(
      requests, [&](std::size_t i, const DownloadResult&) -> Status {
        return make_error(ExitCode::error, "staging request {} failed", i);
      });
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ExitCode::error);
  EXPECT_EQ(result.error().message, "staging request 0 failed");
  EXPECT_LT(elapsed, 4.0);  // the stalled transfer was abandoned, not waited for
  expect_cache_clean(1);    // the finished blob stays; no temporary file does
}

// What a BodyStream was given: the bytes, how often it refused them (a paused transfer), how
// often the download started over.
struct Collected {
  std::string bytes;
  std::size_t refusals = 0;
  std::size_t restarts = 0;
};

// A stream that refuses every third offer once (the transfer pauses, the others go on, and the
// same bytes come again when can_take says they fit).
BodyStream collecting(Collected& into) {
  auto offers = std::make_shared<std::size_t>(0);
  return BodyStream{[&into, offers](std::span<const std::byte> bytes) {
                      if (++*offers % 3 == 0) {
                        ++into.refusals;
                        return false;
                      }
                      into.bytes.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
                      return true;
                    },
                    [](std::size_t) { return true; },
                    [&into] {
                      into.bytes.clear();
                      ++into.restarts;
                    }};
}

TEST_F(FetchDownloader, AStreamedDownloadIsCheckedButWritesNoFile) {
  Collected got;
  std::vector<DownloadRequest> requests = {
      {plain().url("/files/big.bin"), big_hash, std::nullopt, "", {}, collecting(got)}};
  auto result = Downloader(config()).download_all(requests);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE((*result)[0].streamed);
  EXPECT_TRUE((*result)[0].path.empty());
  EXPECT_EQ((*result)[0].sha256_hex, big_hash);
  EXPECT_EQ(got.bytes, testing::read_text(root / "files/big.bin"));
  EXPECT_GT(got.refusals, 0u);  // paused and resumed
  expect_cache_clean(0);

  // A wrong hash is the same error as for a file, and nothing is cached either.
  Collected wrong;
  requests = {{plain().url("/files/big.bin"), small_hash, std::nullopt, "", {}, collecting(wrong)}};
  auto refused = Downloader(config()).download_all(requests);
  expect_network_error(refused, "big.bin", "was expected");
  expect_cache_clean(0);
}

TEST_F(FetchDownloader, AStreamThatThrowsFailsItsDownloadNamedAndNothingElse) {
  // What a follower throws (out of memory for its ring) must not cross curl's C frames or end
  // a reading thread: the download fails with one sentence naming it, and the process goes on.
  const BodyStream throwing{[](std::span<const std::byte>) -> bool { throw std::bad_alloc(); },
                            [](std::size_t) { return true; }, [] {}};
  const std::string file = (root / "files/big.bin").string();
  for (const std::string& url : {plain().url("/files/big.bin"), "file://" + file}) {
    SCOPED_TRACE(url);
    std::vector<DownloadRequest> requests = {{url, big_hash, std::nullopt, "", {}, throwing}};
    auto result = Downloader(config()).download_all(requests);
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, ExitCode::error);
    EXPECT_NE(result.error().message.find(url.starts_with("file:") ? file : url), std::string::npos)
        << result.error().message;
    EXPECT_NE(result.error().message.find("bad_alloc"), std::string::npos)
        << result.error().message;
    expect_cache_clean(0);
  }
}

TEST_F(FetchDownloader, AFileUrlIsStreamedOrFollowedAsADownloadIs) {
  const std::string url = "file://" + (root / "files/big.bin").string();
  const std::string bytes = testing::read_text(root / "files/big.bin");
  // Streamed: the same bytes in order, offered again after a refusal, nothing in the cache.
  Collected got;
  std::vector<DownloadRequest> requests = {{url, big_hash, std::nullopt, "", {}, collecting(got)}};
  auto result = Downloader(config()).download_all(requests);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE((*result)[0].streamed);
  EXPECT_TRUE((*result)[0].path.empty());
  EXPECT_EQ((*result)[0].sha256_hex, big_hash);
  EXPECT_EQ(got.bytes, bytes);
  EXPECT_GT(got.refusals, 0u);
  expect_cache_clean(0);
  // A wrong hash is refused naming the file, and nothing is cached.
  Collected wrong;
  requests = {{url, small_hash, std::nullopt, "", {}, collecting(wrong)}};
  auto refused = Downloader(config()).download_all(requests);
  expect_network_error(refused, "big.bin", "was expected");
  expect_cache_clean(0);
  // Copied: on_stored follows the copy as it grows, and each call's file holds those bytes.
  std::vector<std::uint64_t> stored;
  bool prefix_ok = true;
  DownloadRequest followed{url, big_hash, std::nullopt, "", {}, {}};
  followed.on_stored = [&](int fd, std::uint64_t size) {
    stored.push_back(size);
    std::string head(size, '\0');
    prefix_ok = prefix_ok && ::pread(fd, head.data(), size, 0) == static_cast<ssize_t>(size) &&
                head == bytes.substr(0, size);
  };
  auto copied = Downloader(config()).download_all(std::vector<DownloadRequest>{followed});
  ASSERT_TRUE(copied) << copied.error().message;
  EXPECT_FALSE((*copied)[0].streamed);
  EXPECT_EQ(testing::read_text((*copied)[0].path), bytes);
  ASSERT_GT(stored.size(), 1u);
  EXPECT_TRUE(std::is_sorted(stored.begin(), stored.end()));
  EXPECT_EQ(stored.back(), bytes.size());
  EXPECT_TRUE(prefix_ok);
}

TEST_F(FetchDownloader, ACacheHitIsStreamedOrFollowedAsADownloadIs) {
  const std::string url = "file://" + (root / "files/big.bin").string();
  const std::string bytes = testing::read_text(root / "files/big.bin");
  auto cached = Downloader(config()).download_all(
      std::vector<DownloadRequest>{{url, big_hash, std::nullopt, "", {}, {}}});
  ASSERT_TRUE(cached) << cached.error().message;
  const fs::path blob = (*cached)[0].path;
  // Streamed: the blob's bytes in order (offered again after a refusal); the answer is the hit.
  Collected got;
  std::vector<DownloadRequest> requests = {{url, big_hash, std::nullopt, "", {}, collecting(got)}};
  auto streamed = Downloader(config()).download_all(requests);
  ASSERT_TRUE(streamed) << streamed.error().message;
  EXPECT_TRUE((*streamed)[0].from_cache);
  EXPECT_FALSE((*streamed)[0].streamed);
  EXPECT_EQ((*streamed)[0].path, blob);
  EXPECT_EQ(got.bytes.size(), bytes.size());
  EXPECT_TRUE(got.bytes == bytes);
  EXPECT_GT(got.refusals, 0u);
  // Followed: on_stored is told once, with the whole blob.
  std::vector<std::uint64_t> stored;
  std::string seen;
  DownloadRequest followed{url, big_hash, std::nullopt, "", {}, {}};
  followed.on_stored = [&](int fd, std::uint64_t size) {
    stored.push_back(size);
    seen.assign(size, '\0');
    EXPECT_EQ(::pread(fd, seen.data(), size, 0), static_cast<ssize_t>(size));
  };
  auto hit = Downloader(config()).download_all(std::vector<DownloadRequest>{followed});
  ASSERT_TRUE(hit) << hit.error().message;
  EXPECT_TRUE((*hit)[0].from_cache);
  EXPECT_EQ(stored, std::vector<std::uint64_t>{bytes.size()});
  EXPECT_TRUE(seen == bytes);
  expect_cache_clean(1);
}

// Flips the blob's last byte: its size stays right, and only a hash over every byte tells.
void damage_last_byte(const fs::path& blob) {
  fs::permissions(blob, fs::perms::owner_write, fs::perm_options::add);
  std::string bytes = testing::read_text(blob);
  bytes.back() = static_cast<char>(bytes.back() ^ 0x5a);
  testing::write_text(blob, bytes);
}

TEST_F(FetchDownloader, ADamagedCacheHitIsFollowedUntilItsHashDisagreesThenDownloaded) {
  // The hit is hashed as it is handed on (read once): the follower has all its bytes before
  // the last one shows the damage, is then told to drop them, and gets the download's instead.
  const std::string url = plain().url("/files/big.bin");
  const std::string bytes = testing::read_text(root / "files/big.bin");
  auto cached = Downloader(config()).download_all(
      std::vector<DownloadRequest>{{url, big_hash, std::nullopt, "", {}, {}}});
  ASSERT_TRUE(cached) << cached.error().message;
  const fs::path blob = (*cached)[0].path;
  // Streamed: restarted once; the download then goes into the cache, for the caller to read.
  damage_last_byte(blob);
  Collected got;
  std::vector<DownloadRequest> requests = {{url, big_hash, std::nullopt, "", {}, collecting(got)}};
  auto streamed = Downloader(config()).download_all(requests);
  ASSERT_TRUE(streamed) << streamed.error().message;
  EXPECT_FALSE((*streamed)[0].from_cache);
  EXPECT_FALSE((*streamed)[0].streamed);
  EXPECT_EQ((*streamed)[0].path, blob);
  EXPECT_TRUE(testing::read_text(blob) == bytes);
  EXPECT_EQ(got.restarts, 1u);
  EXPECT_TRUE(got.bytes.empty());
  // Followed: told the whole blob, then 0 bytes, then the download as it grows.
  damage_last_byte(blob);
  std::vector<std::uint64_t> stored;
  DownloadRequest followed{url, big_hash, std::nullopt, "", {}, {}};
  followed.on_stored = [&](int, std::uint64_t size) { stored.push_back(size); };
  auto downloaded = Downloader(config()).download_all(std::vector<DownloadRequest>{followed});
  ASSERT_TRUE(downloaded) << downloaded.error().message;
  EXPECT_FALSE((*downloaded)[0].from_cache);
  EXPECT_TRUE(testing::read_text(blob) == bytes);
  ASSERT_GE(stored.size(), 3u);
  EXPECT_EQ(stored[0], bytes.size());
  EXPECT_EQ(stored[1], 0u);
  EXPECT_EQ(stored.back(), bytes.size());
  expect_cache_clean(1);
}

// While alive, this thread (and the threads it starts) cannot read a file its permissions do
// not allow even as root: CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH leave its effective set
// (capset acts on the calling thread only), and come back at the end.
class WithoutDacOverride {
 public:
  WithoutDacOverride() {
    syscall(SYS_capget, &m_header, m_saved.data());
    std::array<__user_cap_data_struct, 2> dropped = m_saved;
    for (const int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH}) {
      dropped[static_cast<std::size_t>(cap / 32)].effective &= ~(1u << (cap % 32));
    }
    syscall(SYS_capset, &m_header, dropped.data());
  }
  ~WithoutDacOverride() { syscall(SYS_capset, &m_header, m_saved.data()); }
  WithoutDacOverride(const WithoutDacOverride&) = delete;
  WithoutDacOverride& operator=(const WithoutDacOverride&) = delete;

 private:
  __user_cap_header_struct m_header{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, 2> m_saved{};
};

TEST_F(FetchDownloader, ACachedFileThatCannotBeOpenedIsLeftAndTheRequestDownloadedAsItWas) {
  // Opening says nothing about the bytes (another user's file, no descriptor left): the blob is
  // not removed, and the stream, handed nothing yet, gets the download itself.
  const std::string url = plain().url("/files/big.bin");
  auto cached = Downloader(config()).download_all(
      std::vector<DownloadRequest>{{url, big_hash, std::nullopt, "", {}, {}}});
  ASSERT_TRUE(cached) << cached.error().message;
  const fs::path blob = (*cached)[0].path;
  fs::permissions(blob, fs::perms::none);
  Collected got;
  std::vector<DownloadRequest> requests = {{url, big_hash, std::nullopt, "", {}, collecting(got)}};
  Result<std::vector<DownloadResult>> streamed = std::vector<DownloadResult>{};
  {
    WithoutDacOverride unprivileged;
    const int probe = ::open(blob.c_str(), O_RDONLY | O_CLOEXEC);
    if (probe >= 0) ::close(probe);
    ASSERT_LT(probe, 0) << "the blob is still readable: nothing to test";
    streamed = Downloader(config()).download_all(requests);
  }
  ASSERT_TRUE(streamed) << streamed.error().message;
  EXPECT_FALSE((*streamed)[0].from_cache);
  EXPECT_TRUE((*streamed)[0].streamed);
  EXPECT_EQ(got.restarts, 0u);
  EXPECT_TRUE(got.bytes == testing::read_text(root / "files/big.bin"));
  EXPECT_TRUE(fs::exists(blob));
  fs::permissions(blob, fs::perms::owner_read);
  expect_cache_clean(1);
}

TEST_F(FetchDownloader, AStreamedDownloadResumesOrStartsOverAsTheServerAllows) {
  Collected resumed;
  std::vector<DownloadRequest> requests = {{faults().url("/fault/reset/1/files/big.bin?stream"),
                                            big_hash,
                                            std::nullopt,
                                            "",
                                            {},
                                            collecting(resumed)}};
  auto result = Downloader(config()).download_all(requests);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(resumed.bytes, testing::read_text(root / "files/big.bin"));
  EXPECT_EQ(resumed.restarts, 0u);  // the rest came with Range

  Collected restarted;
  requests = {{faults().url("/fault/shortnorange/1/files/big.bin?stream"),
               big_hash,
               std::nullopt,
               "",
               {},
               collecting(restarted)}};
  result = Downloader(config()).download_all(requests);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(restarted.bytes, testing::read_text(root / "files/big.bin"));
  EXPECT_EQ(restarted.restarts, 1u);
  expect_cache_clean(0);
}

// A stream that takes nothing until `open()` says so, then collects the bytes.
BodyStream held_until(const std::function<bool()>& open, std::string& into) {
  return BodyStream{[open, &into](std::span<const std::byte> bytes) {
                      if (!open()) return false;
                      into.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
                      return true;
                    },
                    [open](std::size_t) { return open(); }, [&into] { into.clear(); }};
}

TEST_F(FetchDownloader, ReadsThatNeedNoNetworkRunWhileTheTransfersDo) {
  // A file:// request, then a cache hit, each streamed into a stream that takes nothing until
  // the http request beside it was reported: both are reported in time only if the local read
  // does not hold the transfer back. A deadline lets the stream go in the end, so that a failure
  // is an assertion, not a hang.
  const std::string bytes = testing::read_text(root / "files/big.bin");
  const std::string file_url = "file://" + (root / "files/big.bin").string();
  for (const bool cached : {false, true}) {
    if (cached) {
      ASSERT_TRUE(Downloader(config()).download_all(
          std::vector<DownloadRequest>{{file_url, big_hash, std::nullopt, "", {}, {}}}));
    }
    std::atomic<bool> reported{false};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::string streamed;
    const auto open = [&] { return reported || std::chrono::steady_clock::now() > deadline; };
    std::vector<DownloadRequest> requests = {
        {file_url, big_hash, std::nullopt, "", {}, held_until(open, streamed)},
        // Not in the cache yet (the first round's download is).
        {plain().url(cached ? "/many/5.whl" : "/files/small.bin"),
         std::nullopt,
         std::nullopt,
         "",
         {},
         {}}};
    std::vector<std::size_t> order;
    auto result = Downloader(config()).download_each(
        requests, [&](std::size_t i, const DownloadResult&) -> Status {
          order.push_back(i);
          reported = reported || i == 1;
          return ok();
        });
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(order, (std::vector<std::size_t>{1, 0})) << "cached: " << cached;
    EXPECT_LT(std::chrono::steady_clock::now(), deadline) << "cached: " << cached;
    EXPECT_EQ((*result)[0].from_cache, cached);
    EXPECT_TRUE(streamed == bytes) << "cached: " << cached;
  }
}

TEST_F(FetchDownloader, ReadsThatNeedNoNetworkRunSeveralAtOnce) {
  // Two reads and no transfer: a file:// request streamed into a stream that takes nothing
  // until the second read (another file, or a cache hit) was reported. The stream is let go by
  // that report only if the second read does not wait for the first; with parallel 1 it does
  // (one at a time, as transfers are), and only the deadline lets the stream go.
  const std::string big = "file://" + (root / "files/big.bin").string();
  const std::string small = "file://" + (root / "files/small.bin").string();
  for (const int parallel : {6, 1}) {
    for (const bool cached : {false, true}) {
      SCOPED_TRACE(fmt::format("parallel {}, cached {}", parallel, cached));
      fs::remove_all(cache);
      if (cached) {
        ASSERT_TRUE(Downloader(config()).download_all(
            std::vector<DownloadRequest>{{small, small_hash, std::nullopt, "", {}, {}}}));
      }
      std::atomic<bool> reported{false};
      std::atomic<bool> let_go_by_deadline{false};
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::seconds(parallel == 1 ? 1 : 10);
      std::string streamed;
      const auto open = [&] {
        if (reported) return true;
        if (std::chrono::steady_clock::now() <= deadline) return false;
        let_go_by_deadline = true;
        return true;
      };
      const std::vector<DownloadRequest> requests = {
          {big, big_hash, std::nullopt, "", {}, held_until(open, streamed)},
          {small, small_hash, std::nullopt, "", {}, {}}};
      FetchConfig one_at_a_time = config();
      one_at_a_time.parallel = parallel;
      std::vector<std::size_t> order;
      auto result = Downloader(one_at_a_time)
                        .download_each(requests, [&](std::size_t i, const DownloadResult&) {
                          order.push_back(i);
                          reported = reported || i == 1;
                          return ok();
                        });
      ASSERT_TRUE(result) << result.error().message;
      EXPECT_EQ((*result)[1].from_cache, cached);
      EXPECT_TRUE(streamed == testing::read_text(root / "files/big.bin"));
      EXPECT_EQ(let_go_by_deadline, parallel == 1);
      EXPECT_EQ(order, parallel == 1 ? (std::vector<std::size_t>{0, 1})
                                     : (std::vector<std::size_t>{1, 0}));
    }
  }
}

TEST_F(FetchDownloader, WhereNoThreadCanStartTheReadsAreDoneOnTheCallersThread) {
  // The system refuses this thread new threads (a container at its pids.max): the reads that
  // need no network are done here, after the transfer, and every request is answered.
  const std::string small = plain().url("/files/small.bin");
  ASSERT_TRUE(Downloader(config()).download_all(
      std::vector<DownloadRequest>{{small, small_hash, std::nullopt, "", {}, {}}}));
  const std::vector<DownloadRequest> requests = {
      {"file://" + (root / "files/big.bin").string(), big_hash, std::nullopt, "", {}, {}},
      {small, small_hash, std::nullopt, "", {}, {}},
      {plain().url("/files/big.bin"), std::nullopt, std::nullopt, "", {}, {}}};
  Result<std::vector<DownloadResult>> result = std::vector<DownloadResult>{};
  {
    testing::ThreadsRefused refused;
    if (const std::string why = refused.start(); !why.empty()) GTEST_SKIP() << why;
    bool thread_started = true;
    try {
      std::thread([] {}).join();
    } catch (const std::system_error&) {
      thread_started = false;
    }
    ASSERT_FALSE(thread_started) << "a thread still starts: nothing to test";
    result = Downloader(config()).download_all(requests);
  }
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(result->size(), 3u);
  EXPECT_FALSE((*result)[0].from_cache);
  EXPECT_TRUE((*result)[1].from_cache);
  EXPECT_EQ((*result)[2].sha256_hex, big_hash);
  EXPECT_EQ(testing::read_text((*result)[0].path), testing::read_text(root / "files/big.bin"));
}

TEST_F(FetchDownloader, AFailedTransferStopsTheLocalReadsAndAFailedReadTheTransfers) {
  const std::string file_url = "file://" + (root / "files/big.bin").string();
  // The transfer fails (404) while the file's stream takes nothing (for 20 s): the read is
  // stopped, not waited for.
  std::string streamed;
  const auto start = std::chrono::steady_clock::now();
  const auto after_20_s = [&] {
    return std::chrono::steady_clock::now() > start + std::chrono::seconds(20);
  };
  std::vector<DownloadRequest> requests = {
      {file_url, big_hash, std::nullopt, "", {}, held_until(after_20_s, streamed)},
      {plain().url("/files/missing.bin"), std::nullopt, std::nullopt, "", {}, {}}};
  auto failed = Downloader(config()).download_all(requests);
  expect_network_error(failed, "missing.bin", "HTTP 404");
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  EXPECT_LT(elapsed(), 4.0);
  // The file is not the bytes named, while a transfer stalls: the stalled transfer is abandoned,
  // the error names the file, and no temporary file is left.
  requests = {
      {file_url, small_hash, std::nullopt, "", {}, {}},
      {faults().url("/fault/stall/99/files/big.bin?each"), big_hash, std::nullopt, "", {}, {}}};
  auto refused = Downloader(config()).download_all(requests);
  expect_network_error(refused, (root / "files/big.bin").string() + " is", "was expected");
  EXPECT_LT(elapsed(), 8.0);
  expect_cache_clean(0);
  // Two reads and no transfer: the one whose file is not the bytes named stops the other, held
  // for 20 s, instead of waiting for it.
  const std::string small_url = "file://" + (root / "files/small.bin").string();
  requests = {{file_url, big_hash, std::nullopt, "", {}, held_until(after_20_s, streamed)},
              {small_url, std::string(64, '0'), std::nullopt, "", {}, {}}};
  auto one_refused = Downloader(config()).download_all(requests);
  expect_network_error(one_refused, (root / "files/small.bin").string() + " is", "was expected");
  EXPECT_LT(elapsed(), 12.0);
  expect_cache_clean(0);
}

// Two downloads from one host, the first held (its stream takes nothing) until the second's
// body is complete: they both end only if the second does not wait behind the first on one
// connection. A deadline lets the first go in the end, so that a failure is an assertion.
void expect_downloads_overlap(const FetchConfig& config, const std::string& base,
                              const std::string& big_hash, const std::string& small_hash,
                              std::uint64_t small_size) {
  SCOPED_TRACE(base);
  std::atomic<std::uint64_t> second_got{0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool second_first = false;
  auto first_may_go = [&] {
    if (second_got.load() == small_size) {
      second_first = true;
      return true;
    }
    return std::chrono::steady_clock::now() >= deadline;
  };
  BodyStream held{[&](std::span<const std::byte>) { return first_may_go(); },
                  [&](std::size_t) { return first_may_go(); }, [] {}};
  BodyStream counted{[&](std::span<const std::byte> bytes) {
                       second_got += bytes.size();
                       return true;
                     },
                     [](std::size_t) { return true; }, [&] { second_got = 0; }};
  std::vector<DownloadRequest> requests = {
      {base + "/files/big.bin", big_hash, std::nullopt, "", {}, held},
      {base + "/files/small.bin", small_hash, std::nullopt, "", {}, counted}};
  auto result = Downloader(config).download_all(requests);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE(second_first) << "the second download waited for the first";
}

TEST_F(FetchDownloader, DownloadsFromOneHostRunAtOnceOverHttpAndHttps) {
  const std::uint64_t small_size = fs::file_size(root / "files/small.bin");
  expect_downloads_overlap(config(), plain().url(""), big_hash, small_hash, small_size);
  FetchConfig tls = config();
  tls.ca_cert = world->cert;
  expect_downloads_overlap(tls, "https://127.0.0.1:" + std::to_string(world->tls->port()), big_hash,
                           small_hash, small_size);
}

}  // namespace
}  // namespace venvfix::fetch
