#include "venvfix/index/url.hpp"

#include <gtest/gtest.h>

namespace venvfix::index {
namespace {

TEST(IndexUrl, ResolvesRfc3986NormalExamples) {
  // RFC 3986 §5.4.1, every example.
  const std::string base = "http://a/b/c/d;p?q";
  const std::pair<const char*, const char*> cases[] = {
      {"g:h", "g:h"},
      {"g", "http://a/b/c/g"},
      {"./g", "http://a/b/c/g"},
      {"g/", "http://a/b/c/g/"},
      {"/g", "http://a/g"},
      {"//g", "http://g"},
      {"?y", "http://a/b/c/d;p?y"},
      {"g?y", "http://a/b/c/g?y"},
      {"#s", "http://a/b/c/d;p?q#s"},
      {"g#s", "http://a/b/c/g#s"},
      {"g?y#s", "http://a/b/c/g?y#s"},
      {";x", "http://a/b/c/;x"},
      {"g;x", "http://a/b/c/g;x"},
      {"g;x?y#s", "http://a/b/c/g;x?y#s"},
      {"", "http://a/b/c/d;p?q"},
      {".", "http://a/b/c/"},
      {"./", "http://a/b/c/"},
      {"..", "http://a/b/"},
      {"../", "http://a/b/"},
      {"../g", "http://a/b/g"},
      {"../..", "http://a/"},
      {"../../", "http://a/"},
      {"../../g", "http://a/g"},
  };
  for (const auto& [reference, expected] : cases) {
    EXPECT_EQ(resolve_url(base, reference), expected) << reference;
  }
}

TEST(IndexUrl, ResolvesRfc3986AbnormalExamples) {
  // RFC 3986 §5.4.2.
  const std::string base = "http://a/b/c/d;p?q";
  const std::pair<const char*, const char*> cases[] = {
      {"../../../g", "http://a/g"},
      {"../../../../g", "http://a/g"},
      {"/./g", "http://a/g"},
      {"/../g", "http://a/g"},
      {"g.", "http://a/b/c/g."},
      {".g", "http://a/b/c/.g"},
      {"g..", "http://a/b/c/g.."},
      {"..g", "http://a/b/c/..g"},
      {"./../g", "http://a/b/g"},
      {"./g/.", "http://a/b/c/g/"},
      {"g/./h", "http://a/b/c/g/h"},
      {"g/../h", "http://a/b/c/h"},
      {"g;x=1/./y", "http://a/b/c/g;x=1/y"},
      {"g;x=1/../y", "http://a/b/c/y"},
      {"g?y/./x", "http://a/b/c/g?y/./x"},
      {"g#s/../x", "http://a/b/c/g#s/../x"},
      {"http:g", "http:g"},
  };
  for (const auto& [reference, expected] : cases) {
    EXPECT_EQ(resolve_url(base, reference), expected) << reference;
  }
}

TEST(IndexUrl, ResolvesIndexLinksKeepingCredentials) {
  EXPECT_EQ(resolve_url("https://u:p@mirror.example/simple/torch/",
                        "../../packages/torch-2.8.0.whl#sha256=ab"),
            "https://u:p@mirror.example/packages/torch-2.8.0.whl#sha256=ab");
  EXPECT_EQ(resolve_url("file:///srv/index/simple/torch/", "torch-2.8.0.whl"),
            "file:///srv/index/simple/torch/torch-2.8.0.whl");
}

// A link's ends are trimmed; a space or control character inside it is percent-encoded (found by
// tests/fuzz/index_page_fuzz.cpp: "x.whl #sha256=…" kept a trailing space that a second
// resolution trimmed, so the HTML and JSON readings of one file differed).
TEST(IndexUrl, EncodesSpacesAndControlsInsideALink) {
  const std::string base = "https://index.example/simple/demo/";
  EXPECT_EQ(resolve_url(base, "  demo 1.0.whl\t#sha256=ab "),
            "https://index.example/simple/demo/demo%201.0.whl%09#sha256=ab");
  EXPECT_EQ(resolve_url(base, "demo.whl?a b\x7f"),
            "https://index.example/simple/demo/demo.whl?a%20b%7F");
  const std::string resolved = without_fragment(resolve_url(base, "demo-1.0.whl #sha256=ab"));
  EXPECT_EQ(resolved, "https://index.example/simple/demo/demo-1.0.whl%20");
  EXPECT_EQ(resolve_url(base, resolved), resolved);
  EXPECT_EQ(url_file_name(resolved), "demo-1.0.whl ");
}

TEST(IndexUrl, HandlesUserInfo) {
  const std::string url = "https://user:s3cret@host.example:8443/simple/?x#f";
  EXPECT_EQ(url_user_info(url), "user:s3cret");
  EXPECT_EQ(without_user_info(url), "https://host.example:8443/simple/?x#f");
  EXPECT_EQ(url_host_port(url), "host.example:8443");
  EXPECT_EQ(with_user_info("https://host/a", "t"), "https://t@host/a");
  EXPECT_EQ(url_user_info("https://host/a@b"), std::nullopt);
  EXPECT_EQ(display_url(url).find("s3cret"), std::string::npos);
}

TEST(IndexUrl, FileNamesAndFragments) {
  EXPECT_EQ(url_file_name("https://h/p/a%2Bb-1.0-py3-none-any.whl#sha256=00"),
            "a+b-1.0-py3-none-any.whl");
  EXPECT_EQ(url_fragment("https://h/x.whl#sha256=00"), "sha256=00");
  EXPECT_EQ(without_fragment("https://h/x.whl#sha256=00"), "https://h/x.whl");
  EXPECT_EQ(percent_decode("%41%zz%4"), "A%zz%4");
}

TEST(IndexUrl, ConvertsFileUrls) {
  auto path = file_url_to_path("file:///tmp/a%20b/c");
  ASSERT_TRUE(path);
  EXPECT_EQ(path->string(), "/tmp/a b/c");
  EXPECT_TRUE(file_url_to_path("file://localhost/tmp"));
  EXPECT_FALSE(file_url_to_path("file://otherhost/tmp"));
  EXPECT_FALSE(file_url_to_path("file:relative"));
  EXPECT_FALSE(file_url_to_path("file:///a%00b"));
  EXPECT_EQ(path_to_file_url("/tmp/a b", UrlTarget::directory), "file:///tmp/a%20b/");
  auto round = file_url_to_path(path_to_file_url("/tmp/x+y#z", UrlTarget::file));
  ASSERT_TRUE(round);
  EXPECT_EQ(round->string(), "/tmp/x+y#z");
}

}  // namespace
}  // namespace venvfix::index
