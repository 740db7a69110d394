#include "venvfix/dist/record.hpp"

#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "env/test_support.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/dist/csv.hpp"

namespace venvfix::dist {
namespace {

std::vector<std::vector<std::string>> fields_of(std::string_view text) {
  std::vector<std::vector<std::string>> out;
  for (CsvRow& row : parse_csv(text)) out.push_back(std::move(row.fields));
  return out;
}

using Rows = std::vector<std::vector<std::string>>;

TEST(DistCsv, DialectCases) {
  EXPECT_EQ(fields_of(""), Rows{});
  EXPECT_EQ(fields_of("a,b,c"), (Rows{{"a", "b", "c"}}));
  EXPECT_EQ(fields_of("a,b,c\n"), (Rows{{"a", "b", "c"}}));
  EXPECT_EQ(fields_of("a,b,c\r\nd,e,f\r\n"), (Rows{{"a", "b", "c"}, {"d", "e", "f"}}));
  EXPECT_EQ(fields_of("a\rb\n"), (Rows{{"a"}, {"b"}}));
  EXPECT_EQ(fields_of("\"a,b\",\"c\"\"d\",\n"), (Rows{{"a,b", "c\"d", ""}}));
  EXPECT_EQ(fields_of("\"x\ny\",1\n"), (Rows{{"x\ny", "1"}}));
  EXPECT_EQ(fields_of("\n\n a ,b\n\n"), (Rows{{" a ", "b"}}));
  EXPECT_EQ(fields_of("\"ab\"c,d\n"), (Rows{{"abc", "d"}}));  // non-strict: text after quote
  EXPECT_EQ(fields_of("a\"b,c\n"), (Rows{{"a\"b", "c"}}));    // quote inside unquoted field
  EXPECT_EQ(fields_of("\"open,x\n"), (Rows{{"open,x\n"}}));   // unterminated at end of data
  EXPECT_EQ(fields_of(","), (Rows{{"", ""}}));
}

TEST(DistCsv, LineNumbersCountPhysicalLines) {
  auto rows = parse_csv("a,b,c\n\n\"multi\nline\",,\nlast,,\n");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].line, 1u);
  EXPECT_EQ(rows[1].line, 3u);
  EXPECT_EQ(rows[2].line, 5u);
}

// Runs Python's csv module (the reference, PEP 376) over each text and compares every row.
void cross_check_with_python(const std::vector<std::string>& texts) {
  auto dir = TempDir::create("venvfix-csv-");
  ASSERT_TRUE(dir);
  nlohmann::json input = nlohmann::json::array();
  for (const std::string& text : texts) input.push_back(text);
  test_support::write_text(dir->path() / "in.json", input.dump());
  test_support::write_text(dir->path() / "check.py", R"(
import csv, io, json, sys
texts = json.load(open(sys.argv[1], encoding="utf-8"))
print(json.dumps([list(csv.reader(io.StringIO(t, newline=""))) for t in texts]))
)");
  auto out = test_support::run_command("python3 " + (dir->path() / "check.py").string() + " " +
                                       (dir->path() / "in.json").string());
  ASSERT_EQ(out.status, 0);
  auto expected = nlohmann::json::parse(out.out);
  ASSERT_EQ(expected.size(), texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    Rows python_rows;
    for (const auto& row : expected[i]) {
      if (row.empty()) continue;  // Python yields [] for an empty line; venvfix skips it
      python_rows.push_back(row.get<std::vector<std::string>>());
    }
    EXPECT_EQ(fields_of(texts[i]), python_rows) << "input: " << nlohmann::json(texts[i]).dump();
  }
}

TEST(DistCsv, AgreesWithPythonOnTrickyRows) {
  cross_check_with_python({
      "torch/__init__.py,sha256=abc,123\n",
      "\"a,b.py\",sha256=x,1\r\n\"c\"\"d\",,\r\n",
      "\"multi\nline\",,\n",
      "\"multi\r\nline\",,\r\n",
      "\"ab\"c,d\n",
      "a\"b,c\n",
      "\"unterminated,x\n",
      "\n\n\r\n,,\n",
      "a,b\rc,d\r",
      "\"\",\"\",\"\"\n",
      "\"a\"\"\",b\n",
      "\"\"\"\"\n",
      " \"a\",b\n",
      "\"a\" ,b\n",
      "päth/ü.py,sha256=x,1\n",
      "x,,\n\"y\n",
  });
}

TEST(DistCsv, AgreesWithPythonOnRandomRows) {
  std::mt19937 random(20240601);
  const std::vector<std::string> pieces = {"a",  "b",    ",", "\"", "\"\"", "\r",
                                           "\n", "\r\n", " ", "é",  "/",    "="};
  std::vector<std::string> texts;
  for (int i = 0; i < 400; ++i) {
    std::string text;
    std::size_t length = random() % 24;
    for (std::size_t k = 0; k < length; ++k) text += pieces[random() % pieces.size()];
    texts.push_back(std::move(text));
  }
  cross_check_with_python(texts);
}

// csv_quote against Python's csv.writer (the writer pip writes RECORD with): each field in a row
// beside a plain one, since Python quotes a row of one empty field on its own.
TEST(DistCsv, QuotesFieldsAsPythonsWriterDoes) {
  const std::vector<std::string> fields = {"",          "a",    "a,b",    "say \"hi\"", "\"",
                                           "a\rb",      "a\nb", "a\r\nb", " lead",      "trail ",
                                           "päth/ü.py", "=",    "'"};
  auto dir = TempDir::create("venvfix-csv-");
  ASSERT_TRUE(dir);
  test_support::write_text(dir->path() / "in.json", nlohmann::json(fields).dump());
  test_support::write_text(dir->path() / "write.py", R"(
import csv, io, json, sys
out = []
for field in json.load(open(sys.argv[1], encoding="utf-8")):
    buffer = io.StringIO(newline="")
    csv.writer(buffer).writerow([field, "x"])
    out.append(buffer.getvalue())
print(json.dumps(out))
)");
  auto out = test_support::run_command("python3 " + (dir->path() / "write.py").string() + " " +
                                       (dir->path() / "in.json").string());
  ASSERT_EQ(out.status, 0);
  const auto expected = nlohmann::json::parse(out.out).get<std::vector<std::string>>();
  ASSERT_EQ(expected.size(), fields.size());
  for (std::size_t i = 0; i < fields.size(); ++i) {
    EXPECT_EQ(csv_quote(fields[i]) + ",x\r\n", expected[i]) << nlohmann::json(fields[i]).dump();
    EXPECT_EQ(fields_of(csv_quote(fields[i]) + ",x\r\n"), (Rows{{fields[i], "x"}}));
  }
}

const std::string k_sha_abc = "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0";

TEST(DistRecord, ParsesAWheelRecord) {
  std::string text = "pkg/__init__.py,sha256=" + k_sha_abc +
                     ",3\r\n"
                     "pkg-1.0.dist-info/RECORD,,\r\n"
                     "../../../bin/tool,sha256=" +
                     k_sha_abc + ",3\r\n\"odd,name.py\",sha384=" + std::string(64, 'A') + ",10\r\n";
  auto entries = parse_record(text, "RECORD");
  ASSERT_TRUE(entries) << entries.error().message;
  ASSERT_EQ(entries->size(), 4u);
  EXPECT_EQ((*entries)[0].path, "pkg/__init__.py");
  ASSERT_TRUE((*entries)[0].sha256);
  EXPECT_EQ(*(*entries)[0].sha256, sha256("abc"));
  EXPECT_EQ((*entries)[0].size, 3u);
  EXPECT_EQ((*entries)[0].hash_algorithm, "sha256");
  EXPECT_EQ((*entries)[1].path, "pkg-1.0.dist-info/RECORD");
  EXPECT_FALSE((*entries)[1].sha256);
  EXPECT_FALSE((*entries)[1].size);
  EXPECT_TRUE((*entries)[1].hash_algorithm.empty());
  EXPECT_EQ((*entries)[2].path, "../../../bin/tool");
  EXPECT_EQ((*entries)[3].path, "odd,name.py");
  EXPECT_FALSE((*entries)[3].sha256);  // another algorithm: kept as text
  EXPECT_EQ((*entries)[3].hash_algorithm, "sha384");
  EXPECT_EQ((*entries)[3].hash_value, std::string(64, 'A'));
  EXPECT_EQ((*entries)[3].line, 4u);
}

TEST(DistRecord, EmptyFileHasNoEntries) {
  auto entries = parse_record("", "RECORD");
  ASSERT_TRUE(entries);
  EXPECT_TRUE(entries->empty());
}

struct Malformed {
  std::string text;
  std::string problem;     // a piece of the expected problem sentence
  std::size_t kept = 0;    // entries still returned by the lenient parse
  bool keeps_hash = true;  // whether the kept entry keeps a hash
};

TEST(DistRecord, MalformedRowsAreProblemsWithFileAndLine) {
  const std::vector<Malformed> cases = {
      {"ok.py,,\nshort.py,sha256=" + k_sha_abc + "\n", "line 2 has 2 fields", 2, false},
      {"a.py\n", "line 1 has 1 fields", 1, false},
      {"a.py,sha256=" + k_sha_abc + ",3,extra\n", "has 4 fields", 1, false},
      {"a.py,md5,3\n", "malformed hash 'md5'", 1, false},
      {"a.py,sha256=tooshort,3\n", "malformed sha256 digest", 1, false},
      {"a.py,SHA256=" + k_sha_abc + ",3\n", "malformed hash", 1, false},
      {"a.py,sha256=" + k_sha_abc + "!,3\n", "malformed hash", 1, false},
      {"a.py,,-3\n", "malformed size '-3'", 1, false},
      {"a.py,,12kb\n", "malformed size", 1, false},
      {"a.py,,99999999999999999999999\n", "malformed size", 1, false},
      {",,\n", "empty path", 0, false},
      {std::string("a\0b.py,,\n", 9), "NUL byte", 0, false},
      {"\xff\xfe.py,,\n", "not UTF-8", 0, false},
      {std::string(1 << 20, 'x') + ",,\n", "path of 1048576 bytes", 0, false},
      {"\"open.py,,\n", "ends inside a quoted field", 1, false},
  };
  for (const Malformed& c : cases) {
    RecordParse parsed = parse_record_lenient(c.text, "/venv/x.dist-info/RECORD");
    ASSERT_FALSE(parsed.problems.empty()) << printable_excerpt(c.text);
    bool found = false;
    for (const auto& problem : parsed.problems) {
      EXPECT_NE(problem.find("/venv/x.dist-info/RECORD line "), std::string::npos) << problem;
      if (problem.find(c.problem) != std::string::npos) found = true;
    }
    EXPECT_TRUE(found) << parsed.problems.front() << " / wanted: " << c.problem;
    EXPECT_EQ(parsed.entries.size(), c.kept) << printable_excerpt(c.text);
    for (const auto& entry : parsed.entries) {
      if (entry.path == "ok.py") continue;
      if (!c.keeps_hash) {
        EXPECT_FALSE(entry.sha256 && entry.size) << entry.path;
      }
    }
    auto strict = parse_record(c.text, "/venv/x.dist-info/RECORD");
    ASSERT_FALSE(strict);
    EXPECT_EQ(strict.error().code, ExitCode::usage);
    EXPECT_NE(strict.error().message.find("RECORD line"), std::string::npos);
  }
}

TEST(DistRecord, BadSizeKeepsTheHash) {
  RecordParse parsed = parse_record_lenient("a.py,sha256=" + k_sha_abc + ",x\n", "RECORD");
  ASSERT_EQ(parsed.entries.size(), 1u);
  EXPECT_TRUE(parsed.entries[0].sha256);
  EXPECT_FALSE(parsed.entries[0].size);
  ASSERT_EQ(parsed.problems.size(), 1u);
}

TEST(DistRecord, LongValidRecordIsLinear) {
  std::string text;
  for (int i = 0; i < 30000; ++i) {
    text += fmt::format("nvidia/lib/f{}.so,sha256={},{}\n", i, k_sha_abc, i);
  }
  auto entries = parse_record(text, "RECORD");
  ASSERT_TRUE(entries);
  EXPECT_EQ(entries->size(), 30000u);
  EXPECT_EQ(entries->back().size, 29999u);
}

}  // namespace
}  // namespace venvfix::dist
