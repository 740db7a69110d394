// Hostile and malformed wheels: each is refused with one sentence naming the wheel and the
// member, ExitCode::usage, and nothing is left anywhere: the staging directory's parent (which
// holds the staging directory and a decoy venv) is byte-for-byte what it was.
#include <gtest/gtest.h>

#include "venvfix/env/venv.hpp"
#include "venvfix/wheel/wheel.hpp"
#include "wheel/wheel_test_support.hpp"

namespace venvfix::wheel {
namespace {

class WheelHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-hostile-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(*dir));
    m_venv_root = m_dir->path() / "venv";
    ASSERT_TRUE(test_support::copy_of_template_venv(m_venv_root));
    fs::create_directories(m_dir->path() / "staging");
  }

  // Reads and installs `wheel`; expects a refusal whose message contains `expected`.
  void expect_refused(const std::string& which, const std::string& expected,
                      const ReadLimits& limits = {},
                      const std::string& filename = "demo_pkg-1.0-py3-none-any.whl") {
    fs::path wheel = testing::test_wheels() / which / filename;
    ASSERT_TRUE(fs::exists(wheel)) << wheel;
    auto before = testing::tree_of(m_dir->path());
    auto venv = env::open_venv_at(m_venv_root);
    ASSERT_TRUE(venv) << venv.error().message;
    std::string message;
    ExitCode code = ExitCode::ok;
    auto contents = read_wheel(wheel, limits);
    if (!contents) {
      message = contents.error().message;
      code = contents.error().code;
    } else {
      auto result = install_wheel(*contents, *venv, m_dir->path() / "staging");
      ASSERT_FALSE(result) << which << " was installed";
      message = result.error().message;
      code = result.error().code;
    }
    EXPECT_EQ(code, ExitCode::usage) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_NE(message.find(filename), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_TRUE(testing::tree_of(m_dir->path()) == before) << which << " left files behind";
    EXPECT_FALSE(fs::exists("/tmp/venvfix-evil.py"));
  }

  std::optional<TempDir> m_dir;
  fs::path m_venv_root;
};

TEST_F(WheelHostile, PathTraversal) {
  expect_refused("traversal", "demo_pkg/../../evil.py has a '..' path component");
}
TEST_F(WheelHostile, AbsolutePath) {
  expect_refused("absolute", "/tmp/venvfix-evil.py is an absolute path");
}
TEST_F(WheelHostile, Backslash) {
  // libarchive reads `demo_pkg\evil.py` as `demo_pkg/evil.py`; RECORD (written with the
  // backslash) then disagrees with the archive, and the wheel is refused.
  expect_refused("backslash", "lists demo_pkg\\evil.py, which is not in the archive");
}
TEST_F(WheelHostile, SymlinkMember) {
  expect_refused("symlink", "demo_pkg/link is a symbolic link");
}
TEST_F(WheelHostile, TraversalInsideDataDirectory) {
  expect_refused("data-traversal", "'..' path component");
}
TEST_F(WheelHostile, UnknownDataSchemeKey) {
  expect_refused("unknown-key", "unknown .data scheme key");
}
TEST_F(WheelHostile, DuplicateEntry) {
  expect_refused("duplicate", "demo_pkg/__init__.py appears twice");
}
TEST_F(WheelHostile, Utf8FlagOnBytesThatAreNotUtf8) {
  // zipfile's decode fails on it too; the message names the member by position (its bytes are
  // no text) and says why, never "corrupt zip archive".
  expect_refused("bad-utf8", "member number 2 has a name that is not valid UTF-8", {},
                 "unicode_pkg-1.0-py3-none-any.whl");
}
TEST_F(WheelHostile, TwoMembersOfOneNameOnceDecoded) {
  // A flagged "café.py" and a CP437 "caf\x82.py": zipfile reads both as "café.py".
  expect_refused("same-decoded", "unicode_pkg/caf\\xc3\\xa9.py appears twice", {},
                 "unicode_pkg-1.0-py3-none-any.whl");
}
TEST_F(WheelHostile, ZipBombByRatio) {
  expect_refused("bomb", "zip bomb");
}
TEST_F(WheelHostile, ZipBombByAbsoluteCap) {
  ReadLimits limits;
  limits.max_ratio = 1'000'000;
  limits.max_total_bytes = 1 << 20;
  expect_refused("bomb", "more than 1048576 bytes", limits);
}
TEST_F(WheelHostile, MemberNotInRecord) {
  expect_refused("not-in-record", "demo_pkg/extra.py is not listed in RECORD");
}
TEST_F(WheelHostile, RecordRowWithoutMember) {
  expect_refused("record-only", "demo_pkg/ghost.py, which is not in the archive");
}
TEST_F(WheelHostile, WrongHashInRecordFoundWhileStreaming) {
  expect_refused("wrong-hash", "demo_pkg/big.py does not match its sha256 in RECORD");
}
TEST_F(WheelHostile, SizeDisagreesWithRecord) {
  expect_refused("wrong-size", "has 6 bytes in its header but 7 in RECORD");
}
TEST_F(WheelHostile, DistInfoNameDoesNotMatchFilename) {
  expect_refused("wrong-name", "other_pkg-1.0.dist-info does not match");
}
TEST_F(WheelHostile, WheelVersionTwo) {
  expect_refused("wheel-version", "only major version 1");
}
TEST_F(WheelHostile, EntryPointWithoutCallable) {
  expect_refused("bad-entry-point", "is not of the form module:callable");
}
TEST_F(WheelHostile, TruncatedZip) {
  expect_refused("truncated", "zip");
}
TEST_F(WheelHostile, CorruptCentralDirectory) {
  expect_refused("corrupt-cd", "demo_pkg-1.0-py3-none-any.whl");
}
TEST_F(WheelHostile, NotAZipFile) {
  expect_refused("not-zip", "zip");
}

}  // namespace
}  // namespace venvfix::wheel
