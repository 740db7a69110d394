// The HTTP page cache: Cache-Control and freshness rules as pure functions, the on-disk entry,
// and Downloader::get_page against the real index server on 127.0.0.1 (ETag, 304, max-age,
// no-store, offline), reading the server's request log to see what went over the wire.
#include "venvfix/fetch/page_cache.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fetch/test_server.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/fetch/downloader.hpp"

namespace venvfix::fetch {
namespace {

using testing::TestServer;
using testing::write_text;

TEST(FetchPageCache, ParsesCacheControl) {
  CacheDirectives d = parse_cache_control("public, Max-Age=600, must-revalidate");
  EXPECT_EQ(d.max_age, 600);
  EXPECT_TRUE(d.must_revalidate);
  EXPECT_FALSE(d.no_store || d.no_cache);
  EXPECT_TRUE(parse_cache_control("no-store").no_store);
  EXPECT_TRUE(parse_cache_control("private, no-cache=\"Set-Cookie\"").no_cache);
  EXPECT_EQ(parse_cache_control("max-age=\"60\"").max_age, 60);
  EXPECT_EQ(parse_cache_control("max-age=soon").max_age, 0);  // malformed: stale
  EXPECT_FALSE(parse_cache_control("").max_age);
}

TEST(FetchPageCache, FreshnessLifetimeFollowsRfc9111) {
  const std::int64_t now = 1'700'000'000;
  auto life = [&](std::string cache_control, std::string expires = "", std::string date = "",
                  std::string age = "") {
    CacheHeaders h;
    h.cache_control = std::move(cache_control);
    h.expires = std::move(expires);
    h.date = std::move(date);
    h.age = std::move(age);
    return freshness_lifetime(h, now);
  };
  const std::string date = "Tue, 15 Nov 1994 08:02:31 GMT";
  const std::string expires = "Tue, 15 Nov 1994 08:12:31 GMT";
  EXPECT_EQ(life("max-age=600"), 600);
  EXPECT_EQ(life("max-age=600", "", "", "100"), 500);
  EXPECT_EQ(life("max-age=600, no-cache"), 0);
  EXPECT_EQ(life("no-store"), 0);
  EXPECT_EQ(life(""), 0);  // no freshness information: revalidate at every use
  EXPECT_EQ(life("", expires, date), 600);
  EXPECT_EQ(life("", "0", date), 0);
  EXPECT_EQ(life("max-age=5", expires, date), 5);  // max-age wins over Expires
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), 784111777);
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994"), 784111777);
  EXPECT_FALSE(parse_http_date("yesterday"));
}

TEST(FetchPageCache, StoresEntriesWithoutCredentialsAndRejectsDamagedOnes) {
  auto dir = TempDir::create("venvfix-page-cache-");
  ASSERT_TRUE(dir);
  PageCache cache(dir->path());
  CachedPage page;
  page.url = "https://alice:s3cret@example.org/simple/foo/";
  page.accept = "text/html";
  page.status = 200;
  page.effective_url = page.url;
  page.headers.etag = "\"abc\"";
  page.stored_at = 10;
  page.fresh_until = 20;
  page.body = "<html>\nfoo\n</html>";
  ASSERT_TRUE(cache.store(page));
  auto text = read_file(cache.entry_path(page.url, page.accept));
  ASSERT_TRUE(text);
  EXPECT_EQ(text->find("s3cret"), std::string::npos);
  auto found = cache.find(page.url, page.accept);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->body, page.body);
  EXPECT_EQ(found->effective_url, "https://example.org/simple/foo/");
  EXPECT_TRUE(found->fresh(19));
  EXPECT_FALSE(found->fresh(20));
  EXPECT_FALSE(cache.find(page.url, "application/json"));  // keyed by Accept too
  write_text(cache.entry_path(page.url, page.accept), text->substr(0, text->size() - 3));
  EXPECT_FALSE(cache.find(page.url, page.accept));
}

// get_page against tests/servers/index_server.py, one server per Cache-Control setting.
class FetchPageCacheHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-page-http-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(*dir));
    write_text(root() / "simple/foo/index.html", "<html>foo 1.0</html>\n");
  }
  fs::path root() const { return m_dir->path() / "www"; }
  fs::path log() const { return m_dir->path() / "requests.log"; }
  void start(std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"--log", log().string()});
    m_server = std::make_unique<TestServer>("index_server.py", root(), extra);
    ASSERT_TRUE(m_server->running());
  }
  FetchConfig config(bool offline = false) const {
    FetchConfig c;
    c.cache_dir = m_dir->path() / "cache";
    c.offline = offline;
    c.progress = ProgressMode::off;
    c.max_retries = 0;
    return c;
  }
  Result<TextResponse> get(bool offline = false) {
    Downloader downloader(config(offline));
    return downloader.get_page(url(), {"text/html"});
  }
  std::string url() { return m_url.empty() ? (m_url = m_server->url("/simple/foo/")) : m_url; }
  // The request log, emptied after reading.
  std::vector<nlohmann::json> requests() {
    std::vector<nlohmann::json> out;
    std::string text = testing::read_text(log());
    for (std::string_view line : split(text, '\n')) {
      if (!trim(line).empty()) out.push_back(nlohmann::json::parse(line));
    }
    std::error_code error;
    fs::remove(log(), error);
    return out;
  }

  std::optional<TempDir> m_dir;
  std::unique_ptr<TestServer> m_server;
  std::string m_url;
};

TEST_F(FetchPageCacheHttp, StalePagesAreRevalidatedWithIfNoneMatchAnd304) {
  start();  // no Cache-Control: stale at once
  auto first = get();
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->source, TextResponse::Source::network);
  auto log1 = requests();
  ASSERT_EQ(log1.size(), 1u);
  EXPECT_TRUE(log1[0]["if_none_match"].is_null());

  auto second = get();
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->source, TextResponse::Source::revalidated);
  EXPECT_EQ(second->status, 200);
  EXPECT_EQ(second->body, "<html>foo 1.0</html>\n");
  auto log2 = requests();
  ASSERT_EQ(log2.size(), 1u);
  EXPECT_EQ(log2[0]["if_none_match"], first->cache_headers.etag);
  EXPECT_EQ(log2[0]["status"], 304);

  // A changed page is fetched again and replaces the entry.
  write_text(root() / "simple/foo/index.html", "<html>foo 1.0 2.0</html>\n");
  auto third = get();
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(third->source, TextResponse::Source::network);
  EXPECT_EQ(third->body, "<html>foo 1.0 2.0</html>\n");
  EXPECT_EQ(requests().at(0)["status"], 200);
}

TEST_F(FetchPageCacheHttp, FreshPagesAnswerWithoutARequest) {
  start({"--cache-control", "max-age=600"});
  ASSERT_TRUE(get());
  EXPECT_EQ(requests().size(), 1u);
  auto again = get();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->source, TextResponse::Source::cache);
  EXPECT_TRUE(requests().empty());
}

TEST_F(FetchPageCacheHttp, NoStorePagesAreNeverCached) {
  start({"--cache-control", "no-store"});
  ASSERT_TRUE(get());
  ASSERT_TRUE(get());
  auto log = requests();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_TRUE(log[1]["if_none_match"].is_null());
  EXPECT_FALSE(PageCache(config().cache_dir).find(url(), "text/html"));
  auto offline = get(true);
  ASSERT_FALSE(offline);
  EXPECT_EQ(offline.error().code, ExitCode::network);
}

TEST_F(FetchPageCacheHttp, OfflineUsesStaleEntriesAndNamesMissingOnes) {
  start();
  ASSERT_TRUE(get());
  std::string page = url();
  m_server.reset();  // nothing listens any more
  auto offline = get(true);
  ASSERT_TRUE(offline) << offline.error().message;
  EXPECT_EQ(offline->source, TextResponse::Source::cache);
  EXPECT_EQ(offline->body, "<html>foo 1.0</html>\n");

  Downloader downloader(config(true));
  std::string other = page.substr(0, page.size() - 4) + "bar/";
  auto missing = downloader.get_page(other, {"text/html"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ExitCode::network);
  EXPECT_NE(missing.error().message.find("/simple/bar/"), std::string::npos)
      << missing.error().message;
  // Online, a stale entry whose server is gone is an error, never a silent stale answer.
  auto online = get(false);
  ASSERT_FALSE(online);
  EXPECT_EQ(online.error().code, ExitCode::network);
}

}  // namespace
}  // namespace venvfix::fetch
