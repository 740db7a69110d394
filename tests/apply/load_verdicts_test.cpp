// Kept load verdicts with real shared objects compiled here and the real loader: a verdict
// stands in for a load only while everything it was made of holds. Each library counts its
// loads (a constructor appends a byte to a file), so a test sees whether it was loaded again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>

#include "support/manifests.hpp"
#include "txn/apply_test_support.hpp"
#include "venvfix/apply/load_verdicts.hpp"

namespace venvfix::apply {
namespace {

using namespace venvfix::txn::testing;
using ::testing::HasSubstr;
using ::testing::Not;
using venvfix::testing::manifests;

class LoadVerdicts : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-load-verdicts-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
    m_options.helper = venvfix::testing::venvfix_binary();
    m_options.timeout_seconds = 30;
    m_verdicts.dir = path("verdicts");
    build_dependency(/*with_symbol=*/true);
    compile_shared(path("lib/libneeds.so.1"), "libneeds.so.1",
                   "int dep(void);\nint needs(void) { return dep(); }\n",
                   {path("deps/libdep.so.1")}, "-Wl,-rpath,$ORIGIN/../deps");
  }
  fs::path path(const std::string& name) const { return m_dir->path() / name; }

  // libdep.so.1, which counts its loads; without `dep`, libneeds no longer loads. Built beside
  // and renamed into place: a new inode, as an install gives.
  void build_dependency(bool with_symbol) {
    const std::string counter = path("loads").string();
    std::string code =
        "#include <fcntl.h>\n#include <unistd.h>\n"
        "__attribute__((constructor)) static void count(void) {\n"
        "  int fd = open(\"" +
        counter +
        "\", O_WRONLY | O_CREAT | O_APPEND, 0600);\n"
        "  (void)!write(fd, \"x\", 1);\n  close(fd);\n}\n";
    if (with_symbol) code += "int dep(void) { return 1; }\n";
    compile_shared(path("new/libdep.so.1"), "libdep.so.1", code);
    fs::create_directories(path("deps"));
    fs::rename(path("new/libdep.so.1"), path("deps/libdep.so.1"));
  }
  std::size_t loads() const {
    std::error_code error;
    const auto size = fs::file_size(path("loads"), error);
    return error ? 0 : static_cast<std::size_t>(size);
  }
  std::size_t kept() const {
    std::error_code error;
    std::size_t count = 0;
    for (const auto& entry : fs::directory_iterator(path("verdicts"), error)) {
      count += entry.path().extension() == ".json" ? 1 : 0;
    }
    return count;
  }
  LoadResult check(const fs::path& file) {
    const std::vector<fs::path> files = {file};
    auto results = dlopen_keeping_verdicts(files, manifests(), m_options, m_verdicts);
    EXPECT_TRUE(results) << results.error().message;
    if (!results || results->size() != 1) return {};
    return results->front();
  }

  std::optional<TempDir> m_dir;
  LoadCheckOptions m_options;
  LoadVerdictOptions m_verdicts;
};

TEST_F(LoadVerdicts, AVerdictStandsForALoadOfTheSameFiles) {
  LoadResult first = check(path("lib/libneeds.so.1"));
  EXPECT_EQ(first.status, LoadStatus::loaded) << first.message;
  EXPECT_TRUE(first.proven_at.empty());
  EXPECT_EQ(loads(), 1u);
  EXPECT_EQ(kept(), 1u);

  LoadResult second = check(path("lib/libneeds.so.1"));
  EXPECT_EQ(second.status, LoadStatus::loaded);
  EXPECT_FALSE(second.proven_at.empty());
  EXPECT_EQ(loads(), 1u) << "loaded again although nothing changed";
}

TEST_F(LoadVerdicts, ADependencyReplacedIsLoadedAgain) {
  ASSERT_EQ(check(path("lib/libneeds.so.1")).status, LoadStatus::loaded);
  build_dependency(/*with_symbol=*/false);
  LoadResult broken = check(path("lib/libneeds.so.1"));
  EXPECT_EQ(broken.status, LoadStatus::failed);
  EXPECT_THAT(broken.message, HasSubstr("undefined symbol: dep"));
  EXPECT_TRUE(broken.proven_at.empty());
  EXPECT_EQ(kept(), 1u) << "a failure was kept";
  // Failures are never kept: the same broken files are loaded again (the relocation fails,
  // so no constructor runs).
  EXPECT_EQ(check(path("lib/libneeds.so.1")).status, LoadStatus::failed);
  EXPECT_EQ(loads(), 1u);

  build_dependency(/*with_symbol=*/true);
  LoadResult mended = check(path("lib/libneeds.so.1"));
  EXPECT_EQ(mended.status, LoadStatus::loaded) << mended.message;
  EXPECT_TRUE(mended.proven_at.empty());
  EXPECT_EQ(loads(), 2u);
}

TEST_F(LoadVerdicts, ADependencyNotFoundIsInTheKeyAndFailuresAreNeverKept) {
  compile_with_missing_needed(path("bad/libbad.so.1"), "libbad.so.1", "libvenvfix_absent.so.7");
  const std::vector<fs::path> files = {path("bad/libbad.so.1"), path("lib/libneeds.so.1")};
  auto keys = load_verdict_keys(files, m_options, m_verdicts);
  ASSERT_EQ(keys.size(), 2u);
  ASSERT_TRUE(keys[0]);
  EXPECT_THAT(*keys[0], HasSubstr("libvenvfix_absent.so.7 not found"));
  ASSERT_TRUE(keys[1]);
  // The real loader's listing, its objects by identity, and the host's parts.
  EXPECT_THAT(*keys[1], HasSubstr("file " + path("lib/libneeds.so.1").string() + " dev="));
  EXPECT_THAT(*keys[1], HasSubstr("libdep.so.1 => "));
  EXPECT_THAT(*keys[1], HasSubstr("/deps/libdep.so.1 dev="));
  EXPECT_THAT(*keys[1], HasSubstr("/etc/ld.so.cache"));
  EXPECT_THAT(*keys[1], HasSubstr("environment sha256="));
  EXPECT_EQ(check(path("bad/libbad.so.1")).status, LoadStatus::failed);
  EXPECT_EQ(check(path("bad/libbad.so.1")).status, LoadStatus::failed);
  EXPECT_EQ(kept(), 0u);

  // A preload provides the soname (as torch's preload does): it loads, and that is kept.
  compile_shared(path("pre/libvenvfix_absent.so.7"), "libvenvfix_absent.so.7",
                 "int venvfix_stub(void) { return 0; }\n");
  m_options.preload = {path("pre/libvenvfix_absent.so.7")};
  LoadResult provided = check(path("bad/libbad.so.1"));
  EXPECT_EQ(provided.status, LoadStatus::loaded) << provided.message;
  EXPECT_TRUE(provided.proven_at.empty());
  EXPECT_EQ(kept(), 1u);
  EXPECT_FALSE(check(path("bad/libbad.so.1")).proven_at.empty());
}

// A hard link moves an inode's ctime without changing a byte, as a re-apply's links from the
// unpacked-wheel cache do: a file known by content keeps its verdict, one known by identity not.
TEST_F(LoadVerdicts, ContentStandsForIdentityWhereStagingCheckedIt) {
  ASSERT_EQ(check(path("lib/libneeds.so.1")).status, LoadStatus::loaded);
  fs::create_hard_link(path("deps/libdep.so.1"), path("link-a"));
  EXPECT_TRUE(check(path("lib/libneeds.so.1")).proven_at.empty());
  EXPECT_EQ(loads(), 2u);

  struct stat st {};
  ASSERT_EQ(::stat(path("deps/libdep.so.1").c_str(), &st), 0);
  m_verdicts.known[{st.st_dev, st.st_ino}] = {sha256("stands for libdep's bytes"),
                                              static_cast<std::uint64_t>(st.st_size)};
  ASSERT_EQ(check(path("lib/libneeds.so.1")).status, LoadStatus::loaded);
  EXPECT_EQ(loads(), 3u);  // a new key: the first check with the content
  fs::create_hard_link(path("deps/libdep.so.1"), path("link-b"));
  EXPECT_FALSE(check(path("lib/libneeds.so.1")).proven_at.empty());
  EXPECT_EQ(loads(), 3u);
}

// The same bytes installed into another venv (hard links from the unpacked cache): paths inside
// the venv are keyed relative to it, so the verdict holds there too; keyed absolutely, not.
TEST_F(LoadVerdicts, TheSameBytesInAnotherVenvKeepTheirVerdict) {
  for (const char* file : {"lib/libneeds.so.1", "deps/libdep.so.1"}) {
    struct stat st {};
    ASSERT_EQ(::stat(path(file).c_str(), &st), 0);
    auto digest = sha256_file(path(file));
    ASSERT_TRUE(digest);
    m_verdicts.known[{st.st_dev, st.st_ino}] = {*digest, static_cast<std::uint64_t>(st.st_size)};
  }
  m_verdicts.venv_root = m_dir->path();
  ASSERT_EQ(check(path("lib/libneeds.so.1")).status, LoadStatus::loaded);
  EXPECT_EQ(loads(), 1u);

  const fs::path other = path("other-venv");
  for (const char* file : {"lib/libneeds.so.1", "deps/libdep.so.1"}) {
    fs::create_directories((other / file).parent_path());
    fs::create_hard_link(path(file), other / file);
  }
  m_verdicts.venv_root = other;
  LoadResult there = check(other / "lib/libneeds.so.1");
  EXPECT_EQ(there.status, LoadStatus::loaded);
  EXPECT_FALSE(there.proven_at.empty());
  EXPECT_EQ(loads(), 1u);

  m_verdicts.venv_root.clear();
  EXPECT_TRUE(check(other / "lib/libneeds.so.1").proven_at.empty());
  EXPECT_EQ(loads(), 2u);
}

// A needs-python verdict quotes the loader's message, which names the file: taken in another
// venv, it names that venv's file, not the one of the venv where it was checked.
TEST_F(LoadVerdicts, AKeptMessageNamesTheFileOfTheVenvThatTakesIt) {
  compile_shared(path("venv-a/ext/_ext.so"), "_ext.so",
                 "long PyLong_FromLong(long);\nlong ext(void) { return PyLong_FromLong(1); }\n");
  struct stat st {};
  ASSERT_EQ(::stat(path("venv-a/ext/_ext.so").c_str(), &st), 0);
  auto digest = sha256_file(path("venv-a/ext/_ext.so"));
  ASSERT_TRUE(digest);
  m_verdicts.known[{st.st_dev, st.st_ino}] = {*digest, static_cast<std::uint64_t>(st.st_size)};
  m_verdicts.venv_root = path("venv-a");
  LoadResult first = check(path("venv-a/ext/_ext.so"));
  ASSERT_EQ(first.status, LoadStatus::needs_python) << first.message;
  EXPECT_THAT(first.message, HasSubstr(path("venv-a/ext/_ext.so").string()));

  fs::create_directories(path("venv-b/ext"));
  fs::create_hard_link(path("venv-a/ext/_ext.so"), path("venv-b/ext/_ext.so"));
  m_verdicts.venv_root = path("venv-b");
  LoadResult taken = check(path("venv-b/ext/_ext.so"));
  EXPECT_EQ(taken.status, LoadStatus::needs_python);
  EXPECT_FALSE(taken.proven_at.empty());
  EXPECT_THAT(taken.message, HasSubstr(path("venv-b/ext/_ext.so").string()));
  EXPECT_THAT(taken.message, Not(HasSubstr("venv-a")));
  EXPECT_THAT(taken.message, Not(HasSubstr("$VENV")));
}

TEST_F(LoadVerdicts, RecheckLoadsAgainAndKeepsTheNewVerdict) {
  ASSERT_EQ(check(path("lib/libneeds.so.1")).status, LoadStatus::loaded);
  m_verdicts.reuse = false;
  EXPECT_TRUE(check(path("lib/libneeds.so.1")).proven_at.empty());
  EXPECT_EQ(loads(), 2u);
  m_verdicts.reuse = true;
  EXPECT_FALSE(check(path("lib/libneeds.so.1")).proven_at.empty());
  EXPECT_EQ(loads(), 2u);
}

TEST_F(LoadVerdicts, APreloadChangesTheKey) {
  ASSERT_EQ(check(path("lib/libneeds.so.1")).status, LoadStatus::loaded);
  compile_shared(path("pre/libpre.so.1"), "libpre.so.1", "int pre(void) { return 3; }\n");
  m_options.preload = {path("pre/libpre.so.1")};
  LoadResult preloaded = check(path("lib/libneeds.so.1"));
  EXPECT_EQ(preloaded.status, LoadStatus::loaded) << preloaded.message;
  EXPECT_TRUE(preloaded.proven_at.empty());
  EXPECT_EQ(loads(), 2u);
}

TEST_F(LoadVerdicts, AVerdictThatDoesNotParseIsLoadedAgain) {
  ASSERT_EQ(check(path("lib/libneeds.so.1")).status, LoadStatus::loaded);
  ASSERT_EQ(kept(), 1u);
  for (const auto& entry : fs::directory_iterator(path("verdicts"))) {
    write_text(entry.path(), "{\"schema\": \"venvfix-load-verdict/1\", \"status\": \"loa");
  }
  EXPECT_TRUE(check(path("lib/libneeds.so.1")).proven_at.empty());
  EXPECT_EQ(loads(), 2u);
  EXPECT_FALSE(check(path("lib/libneeds.so.1")).proven_at.empty());
}

// Beyond keep_at_most, the verdicts least recently taken or written go; so do the temporary
// files of a writer that stopped an hour ago, not those of one writing now.
TEST_F(LoadVerdicts, TheLeastRecentlyUsedVerdictsBeyondTheCapAreRemoved) {
  m_verdicts.keep_at_most = 2;
  for (const char* copy : {"lib2", "lib3"}) {
    fs::create_directories(path(copy));
    fs::copy_file(path("lib/libneeds.so.1"), path(copy) / "libneeds.so.1");
  }
  const fs::path a = path("lib/libneeds.so.1");
  const fs::path b = path("lib2/libneeds.so.1");
  const fs::path c = path("lib3/libneeds.so.1");
  ASSERT_EQ(check(a).status, LoadStatus::loaded);
  ASSERT_EQ(check(b).status, LoadStatus::loaded);
  ASSERT_EQ(kept(), 2u);
  // Both written an hour and a half ago; then a check takes a's.
  const auto long_ago = fs::file_time_type::clock::now() - std::chrono::minutes(90);
  for (const auto& entry : fs::directory_iterator(path("verdicts"))) {
    fs::last_write_time(entry.path(), long_ago);
  }
  write_text(path("verdicts/stopped.json.tmp.1"), "{");
  fs::last_write_time(path("verdicts/stopped.json.tmp.1"), long_ago);
  write_text(path("verdicts/writing.json.tmp.2"), "{");
  EXPECT_FALSE(check(a).proven_at.empty());
  EXPECT_EQ(loads(), 2u);

  ASSERT_EQ(check(c).status, LoadStatus::loaded);  // a third verdict: b's goes
  EXPECT_EQ(loads(), 3u);
  EXPECT_EQ(kept(), 2u);
  EXPECT_FALSE(fs::exists(path("verdicts/stopped.json.tmp.1")));
  EXPECT_TRUE(fs::exists(path("verdicts/writing.json.tmp.2")));
  EXPECT_FALSE(check(a).proven_at.empty());
  EXPECT_FALSE(check(c).proven_at.empty());
  EXPECT_EQ(loads(), 3u);
  EXPECT_TRUE(check(b).proven_at.empty());
  EXPECT_EQ(loads(), 4u);
}

TEST_F(LoadVerdicts, WithoutADirectoryNothingIsKept) {
  m_verdicts.dir.clear();
  EXPECT_TRUE(check(path("lib/libneeds.so.1")).proven_at.empty());
  EXPECT_TRUE(check(path("lib/libneeds.so.1")).proven_at.empty());
  EXPECT_EQ(loads(), 2u);
  EXPECT_FALSE(fs::exists(path("verdicts")));
}

}  // namespace
}  // namespace venvfix::apply
