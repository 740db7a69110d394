#include "venvfix/index/page_parser.hpp"

#include <gtest/gtest.h>

#include <random>

namespace venvfix::index {
namespace {

const std::string k_hash(64, 'a');

TEST(IndexHtmlPage, ParsesPep503AttributesAndResolvesLinks) {
  std::string html = R"(<!DOCTYPE html>
<html><head><meta name="pypi:repository-version" content="1.1"><title>Links for demo</title></head>
<body><h1>Links for demo</h1>
<!-- a comment with <a href="nope.whl"> inside -->
<a href="../../packages/demo-1.0-py3-none-any.whl#sha256=)" +
                     std::string(64, 'A') +
                     R"(" data-requires-python="&gt;=3.9,&lt;4" data-core-metadata="sha256=)" +
                     k_hash + R"(">demo-1.0-py3-none-any.whl</a><br/>
<A HREF='demo-0.9.tar.gz#md5=abc' data-yanked="broken &amp; bad">demo-0.9.tar.gz</A>
<a href=demo-0.8-py3-none-any.whl data-yanked data-dist-info-metadata=true>x</a>
<a>no href</a>
</body></html>)";
  auto page = parse_html_page(html, "https://u:p@idx.example/simple/demo/", "demo");
  ASSERT_TRUE(page) << page.error().message;
  ASSERT_EQ(page->files.size(), 3u);
  const IndexFile& first = page->files[0];
  EXPECT_EQ(first.filename, "demo-1.0-py3-none-any.whl");
  EXPECT_EQ(first.url, "https://u:p@idx.example/packages/demo-1.0-py3-none-any.whl");
  EXPECT_EQ(first.sha256_hex, k_hash);  // lowercased
  EXPECT_EQ(first.requires_python, ">=3.9,<4");
  EXPECT_FALSE(first.yanked);
  EXPECT_TRUE(first.has_core_metadata);
  EXPECT_EQ(first.core_metadata_sha256, k_hash);
  const IndexFile& second = page->files[1];
  EXPECT_EQ(second.filename, "demo-0.9.tar.gz");
  EXPECT_EQ(second.sha256_hex, std::nullopt);  // md5 is not used
  EXPECT_TRUE(second.yanked);
  EXPECT_EQ(second.yanked_reason, "broken & bad");
  const IndexFile& third = page->files[2];
  EXPECT_TRUE(third.yanked);
  EXPECT_EQ(third.yanked_reason, "");
  EXPECT_TRUE(third.has_core_metadata);
  EXPECT_EQ(third.core_metadata_sha256, std::nullopt);
}

TEST(IndexHtmlPage, HonoursBaseHref) {
  auto page =
      parse_html_page(R"(<base href="https://files.example/x/"><a href="a-1-py3-none-any.whl">)",
                      "https://idx.example/simple/a/", "a");
  ASSERT_TRUE(page);
  ASSERT_EQ(page->files.size(), 1u);
  EXPECT_EQ(page->files[0].url, "https://files.example/x/a-1-py3-none-any.whl");
}

TEST(IndexHtmlPage, UnescapesCharacterReferences) {
  EXPECT_EQ(html_unescape("&lt;&#62;&#x3D;&amp;amp;&unknown;&"), "<>=&amp;&unknown;&");
  EXPECT_EQ(html_unescape("&#233;"), "\xc3\xa9");
  EXPECT_EQ(html_unescape("&#99999999999;"), "&#99999999999;");
}

TEST(IndexHtmlPage, RejectsMalformedPagesNamingTheUrl) {
  const char* bad_pages[] = {
      R"(<a href="x.whl)",                      // quote never closed
      R"(<a href="x.whl" )",                    // tag never closed
      R"(<!-- never closed <a href="x.whl">)",  // comment never closed
      R"(<a href="x.whl#sha256=1234">)",        // hash too short
      R"(<a href="x.whl#sha256=zz">)",          // not hex
      R"(<a href="https://h/dir/">)",           // no file name
  };
  for (const char* html : bad_pages) {
    auto page = parse_html_page(html, "https://user:pw@idx.example/simple/x/", "x");
    ASSERT_FALSE(page) << html;
    EXPECT_EQ(page.error().code, ExitCode::network);
    EXPECT_NE(page.error().message.find("idx.example/simple/x/"), std::string::npos);
    EXPECT_EQ(page.error().message.find("pw"), std::string::npos) << page.error().message;
  }
}

TEST(IndexJsonPage, ParsesPep691) {
  std::string json = R"({
    "meta": {"api-version": "1.1"},
    "name": "demo",
    "files": [
      {"filename": "demo-1.0-py3-none-any.whl", "url": "/files/demo-1.0-py3-none-any.whl",
       "hashes": {"sha256": ")" +
                     k_hash + R"(", "md5": "x"}, "requires-python": ">=3.9",
       "core-metadata": {"sha256": ")" +
                     k_hash + R"("}, "size": 1234},
      {"filename": "demo-0.9-py3-none-any.whl", "url": "https://cdn.example/demo-0.9-py3-none-any.whl",
       "hashes": {}, "yanked": "security", "dist-info-metadata": true},
      {"filename": "demo-0.8-py3-none-any.whl", "url": "demo-0.8-py3-none-any.whl",
       "hashes": {}, "yanked": false, "requires-python": null}
    ]})";
  auto page = parse_json_page(json, "https://idx.example/simple/demo/", "demo");
  ASSERT_TRUE(page) << page.error().message;
  ASSERT_EQ(page->files.size(), 3u);
  EXPECT_EQ(page->files[0].url, "https://idx.example/files/demo-1.0-py3-none-any.whl");
  EXPECT_EQ(page->files[0].sha256_hex, k_hash);
  EXPECT_EQ(page->files[0].requires_python, ">=3.9");
  EXPECT_EQ(page->files[0].core_metadata_sha256, k_hash);
  EXPECT_EQ(page->files[0].size, 1234u);
  EXPECT_TRUE(page->files[1].yanked);
  EXPECT_EQ(page->files[1].yanked_reason, "security");
  EXPECT_TRUE(page->files[1].has_core_metadata);
  EXPECT_FALSE(page->files[2].yanked);
  EXPECT_EQ(page->files[2].url, "https://idx.example/simple/demo/demo-0.8-py3-none-any.whl");
  EXPECT_EQ(page->files[2].requires_python, std::nullopt);
}

TEST(IndexJsonPage, RejectsMalformedDocuments) {
  const char* bad_documents[] = {
      "{",
      "[]",
      R"({"files": []})",
      R"({"meta": {"api-version": "2.0"}, "files": []})",
      R"({"meta": {"api-version": "1.0"}, "files": {}})",
      R"({"meta": {"api-version": "1.0"}, "files": [{"url": "x"}]})",
      R"({"meta": {"api-version": "1.0"}, "files": [{"filename": "x.whl"}]})",
      R"({"meta": {"api-version": "1.0"}, "files": [{"filename": "../x.whl", "url": "x"}]})",
      R"({"meta": {"api-version": "1.0"}, "files": [{"filename": "x.whl", "url": "x", "hashes": {"sha256": 5}}]})",
      R"({"meta": {"api-version": "1.0"}, "files": [{"filename": "x.whl", "url": "x", "yanked": 1}]})",
      R"({"meta": {"api-version": "1.0"}, "files": [{"filename": "x.whl", "url": "x", "size": -1}]})",
  };
  for (const char* json : bad_documents) {
    auto page = parse_json_page(json, "https://idx.example/simple/x/", "x");
    ASSERT_FALSE(page) << json;
    EXPECT_EQ(page.error().code, ExitCode::network);
    EXPECT_NE(page.error().message.find("https://idx.example/simple/x/"), std::string::npos);
  }
}

TEST(IndexPage, ChoosesTheParserFromTheContentType) {
  EXPECT_EQ(page_format("application/vnd.pypi.simple.v1+json; charset=utf-8", ""),
            PageFormat::json);
  EXPECT_EQ(page_format("text/html", "{"), PageFormat::html);
  EXPECT_EQ(page_format("", "  {\"meta\""), PageFormat::json);
  EXPECT_EQ(page_format("", "<html>"), PageFormat::html);
}

TEST(IndexPage, SurvivesRandomBytes) {
  // Hostile input never crashes or hangs: mutate a valid page at random (bounded count).
  std::string seed = R"(<a href="demo-1.0-py3-none-any.whl#sha256=)" + k_hash +
                     R"(" data-yanked="&#x41;">x</a>{"meta":{"api-version":"1.0"},"files":[]})";
  std::mt19937 random(12345);
  for (int round = 0; round < 3000; ++round) {
    std::string text = seed;
    int edits = 1 + static_cast<int>(random() % 8);
    for (int i = 0; i < edits; ++i) {
      std::size_t at = random() % text.size();
      text[at] = static_cast<char>(random() % 256);
    }
    if (round % 3 == 0) text = text.substr(0, random() % text.size());
    (void)parse_html_page(text, "https://h/simple/demo/", "demo");
    (void)parse_json_page(text, "https://h/simple/demo/", "demo");
    (void)parse_json_page(text.substr(text.find('{') == std::string::npos ? 0 : text.find('{')),
                          "https://h/simple/demo/", "demo");
  }
}

}  // namespace
}  // namespace venvfix::index
