// The index page parsers held to pip's own: pip's parse_links (pip._internal.index.collector,
// the pip of pyenv's newest Python) reads the same PEP 503 and PEP 691 pages, and for every link
// both must name the same file at the same URL (compared percent-decoded: pip quotes every
// non-ASCII byte, venvfix only spaces and controls), with the same sha256, Requires-Python,
// yanked reason and core-metadata hash.
//
// Where venvfix decides differently on purpose, the pages below stay out of it, and the README
// ("Decisions where the contract is silent") says so: a fragment naming a weaker hash before
// sha256 (pip takes the first, venvfix the sha256), data-core-metadata="false" or empty (pip
// reads any value as present), and a JSON "yanked": "" (pip: not yanked; PEP 691 forbids it).
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "env/test_support.hpp"
#include "support/world_for.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/index/page_parser.hpp"
#include "venvfix/index/url.hpp"

namespace venvfix::index {
namespace {

using nlohmann::json;
using test_support::run_command;
using test_support::shell_quote;
using test_support::write_text;

constexpr std::string_view k_page_url = "https://index.example/simple/demo/";

// Prints, for each link pip reads from a page, what the test compares.
constexpr std::string_view k_pip_links = R"(import json, sys, urllib.parse
from pip._internal.index.collector import IndexContent, parse_links
page_url, content_type, path = sys.argv[1:4]
page = IndexContent(open(path, "rb").read(), content_type, encoding=None, url=page_url)
out = []
for link in parse_links(page):
    md = link.metadata_file_data
    rp = (link.requires_python or "").strip()
    out.append({"url": urllib.parse.unquote(link.url_without_fragment), "filename": link.filename,
                "sha256": link._hashes.get("sha256"), "requires_python": rp or None,
                "yanked_reason": link.yanked_reason, "metadata": md is not None,
                "metadata_sha256": None if md is None else (md.hashes or {}).get("sha256")})
print(json.dumps(out))
)";

const std::string k_hash = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

struct Page {
  std::string name;
  std::string content_type;
  std::string body;
};

std::vector<Page> pages() {
  const std::string h = k_hash;
  return {
      {"PEP 503 attributes", "text/html",
       "<!DOCTYPE html><html><body>\n"
       "<a href=\"../../packages/demo-1.0-py3-none-any.whl#sha256=" +
           h + "\" data-requires-python=\"&gt;=3.8,&lt;4\" data-core-metadata=\"sha256=" + h +
           "\">demo-1.0</a><br/>\n"
           "<a href=\"https://files.example/p/demo-0.9.tar.gz\" data-yanked=\"broken "
           "&quot;build&quot; &amp; more\" data-dist-info-metadata=\"true\">old</a>\n"
           "<a href=\"demo-0.8-py3-none-any.whl\" data-yanked=\"\" "
           "data-requires-python=\" &gt;=3.7 \">empty reason</a>\n"
           "<!-- <a href=\"commented-out.whl\">no</a> -->\n</body></html>\n"},
      {"links as hands write them", "text/html",
       "<html><head><base href=\"https://mirror.example/root/sub/\"></head><body>\n"
       "<A HREF=\"./../pkg/./demo-2.0-py3-none-any.whl#sha256=" +
           h +
           "\">upper</A>\n"
           "<a href=demo-3.0-py3-none-any.whl>unquoted</a>\n"
           "<a href='/abs/demo-4.0-py3-none-any.whl' data-requires-python='&gt;=3.9'>single</a>\n"
           "<a href=\"demo%2Bx-1.0.tar.gz\">escaped plus</a>\n"
           "<a href=\"demo 5.0-py3-none-any.whl\">a space</a>\n"
           "<a href=\"demo-5.1-py3-none-any.whl #sha256=" +
           h +
           "\">a space before '#'</a>\n"
           "<a href=\"caf\xc3\xa9-1.0-py3-none-any.whl\">UTF-8</a>\n"
           "<a href=\"get?name=demo&amp;v=6.0#sha256=" +
           h +
           "\">query</a>\n"
           "<a href=\"demo-7.0.whl#egg=demo&sha256=" +
           h +
           "\">two fragment items</a>\n"
           "</body></html>\n"},
      {"PEP 691 JSON", "application/vnd.pypi.simple.v1+json",
       R"({"meta": {"api-version": "1.1"}, "name": "demo", "files": [
         {"filename": "demo-1.0-py3-none-any.whl", "url": "../../files/demo-1.0-py3-none-any.whl",
          "hashes": {"sha256": ")" +
           h + R"(", "md5": "00"}, "requires-python": ">=3.8",
          "yanked": false, "core-metadata": {"sha256": ")" +
           h + R"("}, "size": 1234},
         {"filename": "demo-0.9.tar.gz", "url": "https://files.example/demo-0.9.tar.gz",
          "hashes": {}, "yanked": "security issue", "dist-info-metadata": true},
         {"filename": "demo-0.8-py3-none-any.whl", "url": "demo-0.8-py3-none-any.whl",
          "hashes": {"sha256": ")" +
           h + R"("}, "requires-python": null, "yanked": true}]})"},
  };
}

std::optional<json> pip_links(const fs::path& python, const fs::path& dir, const Page& page) {
  write_text(dir / "page", page.body);
  const auto out = run_command(
      shell_quote(python.string()) + " " + shell_quote((dir / "pip_links.py").string()) + " " +
      shell_quote(std::string(k_page_url)) + " " + shell_quote(page.content_type) + " " +
      shell_quote((dir / "page").string()));
  if (out.status != 0) return std::nullopt;
  return json::parse(out.out);
}

json optional_text(const std::optional<std::string>& text) {
  return text ? json(*text) : json(nullptr);
}

TEST(IndexPageAgainstPip, EveryLinkIsTheFilePipReads) {
  const fs::path python = venvfix::testing::pyenv_python("3.13");
  if (python.empty()) GTEST_SKIP() << "no pyenv Python 3.13 (and its pip)";
  auto dir = TempDir::create("venvfix-pip-links-");
  ASSERT_TRUE(dir) << dir.error().message;
  write_text(dir->path() / "pip_links.py", k_pip_links);
  for (const Page& page : pages()) {
    SCOPED_TRACE(page.name);
    const std::optional<json> expected = pip_links(python, dir->path(), page);
    ASSERT_TRUE(expected) << "pip could not read the page";
    auto parsed = parse_page(page.body, page.content_type, k_page_url, "demo");
    ASSERT_TRUE(parsed) << parsed.error().message;
    ASSERT_EQ(parsed->files.size(), expected->size());
    for (std::size_t i = 0; i < parsed->files.size(); ++i) {
      const IndexFile& file = parsed->files[i];
      const json& link = (*expected)[i];
      SCOPED_TRACE(file.filename);
      EXPECT_EQ(percent_decode(file.url), link["url"]);
      EXPECT_EQ(file.filename, link["filename"]);
      EXPECT_EQ(optional_text(file.sha256_hex), link["sha256"]);
      EXPECT_EQ(optional_text(file.requires_python), link["requires_python"]);
      EXPECT_EQ(optional_text(file.yanked_reason), link["yanked_reason"]);
      EXPECT_EQ(file.has_core_metadata, link["metadata"]);
      EXPECT_EQ(optional_text(file.core_metadata_sha256), link["metadata_sha256"]);
    }
  }
}

}  // namespace
}  // namespace venvfix::index
