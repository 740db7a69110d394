#include "venvfix/env/venv.hpp"

#include <unistd.h>

#include <cstdlib>

#include <gtest/gtest.h>

#include "env/test_support.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix::env {
namespace {

using test_support::make_venv;
using test_support::write_text;

class EnvVenv : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-env-");
    ASSERT_TRUE(dir) << dir.error().message;
    m_dir.emplace(std::move(*dir));
  }
  fs::path dir() const { return m_dir->path(); }

  // A venv laid out by hand as a given tool writes it.
  fs::path fake_venv(std::string_view cfg, std::string_view lib_dir = "python3.12") {
    fs::path root = dir() / "venv";
    write_text(root / "pyvenv.cfg", cfg);
    if (!lib_dir.empty()) fs::create_directories(root / "lib" / lib_dir / "site-packages");
    return root;
  }

  std::optional<TempDir> m_dir;
};

TEST_F(EnvVenv, OpensAVenvMadeByPythonVenv) {
  const fs::path root = dir() / "v";
  ASSERT_TRUE(make_venv(root));
  auto venv = open_venv_at(root);
  ASSERT_TRUE(venv) << venv.error().message;
  std::string minor = test_support::host_python_minor();
  EXPECT_EQ(fmt::format("{}.{}", venv->python.major, venv->python.minor), minor);
  EXPECT_TRUE(venv->python.full.starts_with(minor + "."));
  EXPECT_EQ(venv->implementation, "cpython");
  EXPECT_EQ(venv->root, root);
  // python -m venv makes lib64 a symlink to lib on 64-bit Linux: one directory, listed once.
  ASSERT_EQ(venv->site_packages.size(), 1u);
  EXPECT_EQ(venv->site_packages[0], root / "lib" / ("python" + minor) / "site-packages");
  EXPECT_EQ(venv->purelib, venv->site_packages[0]);
  EXPECT_EQ(venv->platlib, venv->purelib);
  EXPECT_FALSE(venv->include_system_site_packages);
  EXPECT_FALSE(venv->home.empty());
  EXPECT_EQ(venv->state_dir(), root / ".venvfix");
}

TEST_F(EnvVenv, SeparateLib64IsASecondSitePackages) {
  const fs::path root = dir() / "v";
  ASSERT_TRUE(make_venv(root));
  std::string lib = "python" + test_support::host_python_minor();
  fs::remove(root / "lib64");
  fs::create_directories(root / "lib64" / lib / "site-packages");
  auto venv = open_venv_at(root);
  ASSERT_TRUE(venv) << venv.error().message;
  ASSERT_EQ(venv->site_packages.size(), 2u);
  EXPECT_EQ(venv->site_packages[0], root / "lib" / lib / "site-packages");
  EXPECT_EQ(venv->site_packages[1], root / "lib64" / lib / "site-packages");
  EXPECT_EQ(venv->purelib, venv->site_packages[0]);
  EXPECT_EQ(venv->platlib, venv->site_packages[1]);
}

TEST_F(EnvVenv, OnlyLib64SitePackages) {
  fs::path root = fake_venv("version = 3.12.1\n", "");
  fs::create_directories(root / "lib64" / "python3.12" / "site-packages");
  auto venv = open_venv_at(root);
  ASSERT_TRUE(venv) << venv.error().message;
  ASSERT_EQ(venv->site_packages.size(), 1u);
  EXPECT_EQ(venv->purelib, root / "lib64" / "python3.12" / "site-packages");
}

TEST_F(EnvVenv, VirtualenvStyleCfg) {
  fs::path root = fake_venv(
      "home = /usr/bin\nimplementation = CPython\nversion_info = 3.12.3.final.0\n"
      "virtualenv = 20.26.2\ninclude-system-site-packages = TRUE\n"
      "base-prefix = /usr\n");
  auto venv = open_venv_at(root);
  ASSERT_TRUE(venv) << venv.error().message;
  EXPECT_EQ(venv->python.major, 3);
  EXPECT_EQ(venv->python.minor, 12);
  EXPECT_EQ(venv->python.micro, 3);
  EXPECT_EQ(venv->python.full, "3.12.3.final.0");
  EXPECT_EQ(venv->implementation, "cpython");
  EXPECT_TRUE(venv->include_system_site_packages);
  EXPECT_EQ(venv->home, "/usr/bin");
}

TEST_F(EnvVenv, UvStyleCfgWithoutPip) {
  // uv writes version_info with three components and installs no pip.
  fs::path root = fake_venv(
      "home = /opt/python/bin\r\nimplementation = CPython\r\nuv = 0.4.18\r\n"
      "version_info = 3.12.6\r\ninclude-system-site-packages = false\r\n"
      "prompt = proj\r\n");
  auto venv = open_venv_at(root);
  ASSERT_TRUE(venv) << venv.error().message;
  EXPECT_EQ(venv->python.full, "3.12.6");
  EXPECT_EQ(venv->python.micro, 6);
  EXPECT_EQ(venv->home, "/opt/python/bin");
  EXPECT_FALSE(venv->include_system_site_packages);
  EXPECT_FALSE(fs::exists(venv->purelib / "pip"));
}

TEST_F(EnvVenv, MissingVersionIsDerivedFromLibDirectory) {
  fs::path root = fake_venv("home = /usr/bin\n", "python3.11");
  auto venv = open_venv_at(root);
  ASSERT_TRUE(venv) << venv.error().message;
  EXPECT_EQ(venv->python.major, 3);
  EXPECT_EQ(venv->python.minor, 11);
  EXPECT_EQ(venv->python.full, "3.11");
}

TEST_F(EnvVenv, FreeThreadedAndPypyLibDirectories) {
  {
    fs::path root = fake_venv("version = 3.13.1\n", "python3.13t");
    auto venv = open_venv_at(root);
    ASSERT_TRUE(venv) << venv.error().message;
    EXPECT_EQ(venv->lib_dir_name, "python3.13t");
  }
  fs::remove_all(dir() / "venv");
  fs::path root = fake_venv("implementation = PyPy\n", "pypy3.10");
  auto venv = open_venv_at(root);
  ASSERT_TRUE(venv) << venv.error().message;
  EXPECT_EQ(venv->implementation, "pypy");
  EXPECT_EQ(venv->python.minor, 10);
}

TEST_F(EnvVenv, GarbageVersionFallsBackToLibDirectory) {
  fs::path root = fake_venv("version = banana\nversion_info = ???\n", "python3.12");
  auto venv = open_venv_at(root);
  ASSERT_TRUE(venv) << venv.error().message;
  EXPECT_EQ(venv->python.minor, 12);
}

TEST_F(EnvVenv, AmbiguousLibDirectoriesWithoutVersionIsAnError) {
  fs::path root = fake_venv("home = /usr/bin\n", "python3.11");
  fs::create_directories(root / "lib" / "python3.12" / "site-packages");
  auto venv = open_venv_at(root);
  ASSERT_FALSE(venv);
  EXPECT_EQ(venv.error().code, ExitCode::usage);
  EXPECT_NE(venv.error().message.find("pyvenv.cfg"), std::string::npos) << venv.error().message;
  EXPECT_NE(venv.error().message.find("python3.11, python3.12"), std::string::npos)
      << venv.error().message;
}

TEST_F(EnvVenv, NoVersionAndNoLibDirectoryNamesTheFile) {
  fs::path root = fake_venv("this is not a config file at all\n", "");
  auto venv = open_venv_at(root);
  ASSERT_FALSE(venv);
  EXPECT_EQ(venv.error().code, ExitCode::usage);
  EXPECT_NE(venv.error().message.find((root / "pyvenv.cfg").string()), std::string::npos)
      << venv.error().message;
}

TEST_F(EnvVenv, BinaryCfgIsAnErrorNamingTheFile) {
  fs::path root = fake_venv(std::string("version = 3.12\0\xff\xfe", 16));
  auto venv = open_venv_at(root);
  ASSERT_FALSE(venv);
  EXPECT_NE(venv.error().message.find((root / "pyvenv.cfg").string()), std::string::npos);
}

TEST_F(EnvVenv, VersionWithoutMatchingLibDirectory) {
  fs::path root = fake_venv("version = 3.12.0\n", "python3.11");
  auto venv = open_venv_at(root);
  ASSERT_FALSE(venv);
  EXPECT_NE(venv.error().message.find("python3.12"), std::string::npos) << venv.error().message;
}

TEST_F(EnvVenv, NotAVenv) {
  fs::create_directories(dir() / "plain");
  auto no_cfg = open_venv_at(dir() / "plain");
  ASSERT_FALSE(no_cfg);
  EXPECT_EQ(no_cfg.error().code, ExitCode::usage);
  EXPECT_NE(no_cfg.error().message.find("no pyvenv.cfg"), std::string::npos);

  auto missing = open_venv_at(dir() / "nowhere");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("nowhere"), std::string::npos);

  write_text(dir() / "file", "x");
  auto file = open_venv_at(dir() / "file");
  ASSERT_FALSE(file);
  EXPECT_NE(file.error().message.find("not a directory"), std::string::npos);

  fs::create_directories(dir() / "cfgdir" / "pyvenv.cfg");
  auto unreadable = open_venv_at(dir() / "cfgdir");
  ASSERT_FALSE(unreadable);
  EXPECT_NE(unreadable.error().message.find("cannot read"), std::string::npos)
      << unreadable.error().message;
}

TEST_F(EnvVenv, TrailingSlashAndDotsAreNormalised) {
  fs::path root = fake_venv("version = 3.12.0\n");
  auto venv = open_venv_at(fs::path(root.string() + "/../venv/"));
  ASSERT_TRUE(venv) << venv.error().message;
  EXPECT_EQ(venv->root, root);
}

// Restores an environment variable and the working directory when a test ends.
class ScopedEnvironment {
 public:
  explicit ScopedEnvironment(const char* name) : m_name(name) {
    if (const char* value = std::getenv(name)) m_old = value;
    m_cwd = fs::current_path();
  }
  ~ScopedEnvironment() {
    if (m_old) {
      ::setenv(m_name, m_old->c_str(), 1);
    } else {
      ::unsetenv(m_name);
    }
    fs::current_path(m_cwd);
  }

 private:
  const char* m_name;
  std::optional<std::string> m_old;
  fs::path m_cwd;
};

TEST_F(EnvVenv, DiscoveryOrderExplicitThenVirtualEnvThenDotVenv) {
  ScopedEnvironment saved("VIRTUAL_ENV");
  write_text(dir() / "a" / "pyvenv.cfg", "version = 3.11.2\n");
  fs::create_directories(dir() / "a" / "lib" / "python3.11" / "site-packages");
  write_text(dir() / "b" / "pyvenv.cfg", "version = 3.12.2\n");
  fs::create_directories(dir() / "b" / "lib" / "python3.12" / "site-packages");
  write_text(dir() / "work" / ".venv" / "pyvenv.cfg", "version = 3.10.2\n");
  fs::create_directories(dir() / "work" / ".venv" / "lib" / "python3.10" / "site-packages");
  fs::create_directories(dir() / "empty");

  ::setenv("VIRTUAL_ENV", (dir() / "b").c_str(), 1);
  fs::current_path(dir() / "work");
  auto explicit_venv = open_venv(dir() / "a");
  ASSERT_TRUE(explicit_venv) << explicit_venv.error().message;
  EXPECT_EQ(explicit_venv->python.minor, 11);

  auto from_env = open_venv(std::nullopt);
  ASSERT_TRUE(from_env) << from_env.error().message;
  EXPECT_EQ(from_env->python.minor, 12);

  ::unsetenv("VIRTUAL_ENV");
  auto local = open_venv(std::nullopt);
  ASSERT_TRUE(local) << local.error().message;
  EXPECT_EQ(local->python.minor, 10);
  EXPECT_EQ(local->root, dir() / "work" / ".venv");

  fs::current_path(dir() / "empty");
  auto none = open_venv(std::nullopt);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ExitCode::usage);
  EXPECT_NE(none.error().message.find("--venv"), std::string::npos);
  EXPECT_NE(none.error().message.find("$VIRTUAL_ENV"), std::string::npos);
  EXPECT_NE(none.error().message.find(".venv"), std::string::npos);

  ::setenv("VIRTUAL_ENV", (dir() / "empty").c_str(), 1);
  auto bad_env = open_venv(std::nullopt);
  ASSERT_FALSE(bad_env);
  EXPECT_NE(bad_env.error().message.find("$VIRTUAL_ENV"), std::string::npos);
}

TEST(EnvPythonVersion, Parses) {
  auto v = parse_python_version("3.12.3");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->major, 3);
  EXPECT_EQ(v->minor, 12);
  EXPECT_EQ(v->micro, 3);
  ASSERT_TRUE(parse_python_version("3.13.0rc1"));
  EXPECT_EQ(parse_python_version("3.13.0rc1")->micro, 0);
  ASSERT_TRUE(parse_python_version(" 3.11.7.final.0 "));
  EXPECT_EQ(parse_python_version(" 3.11.7.final.0 ")->full, "3.11.7.final.0");
  EXPECT_EQ(parse_python_version("3.9")->micro, 0);
  EXPECT_FALSE(parse_python_version(""));
  EXPECT_FALSE(parse_python_version("3"));
  EXPECT_FALSE(parse_python_version("three.twelve"));
  EXPECT_FALSE(parse_python_version("3.12 3"));
  EXPECT_FALSE(parse_python_version("99999999999999.1"));
}

TEST(EnvPyvenvCfg, ParsesAsSitePyDoes) {
  auto cfg = parse_pyvenv_cfg("Home = /usr/bin \n# comment\nnoequals\nkey=a=b\n", "cfg");
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg->get("home"), "/usr/bin");
  EXPECT_EQ(cfg->get("key"), "a=b");
  EXPECT_FALSE(cfg->get("noequals"));
}

// The rules tests/env/pyvenv_cfg_python_test.cpp holds against the real interpreters, here
// without one: universal newlines, Python's strip() and lower(), first and last entries.
// getpath's two readings of `home`, as tests/env/pyvenv_cfg_python_test.cpp found them in the
// real interpreters: 3.8-3.10's C tokens, 3.11+'s partition and strip().
TEST(EnvPyvenvCfg, ReadsHomeAsEachGetpathDoes) {
  using enum HomeReader;
  EXPECT_EQ(getpath_home("home = /a\n", getpath_c), "/a");
  EXPECT_EQ(getpath_home("home = /a\n", getpath_py), "/a");
  EXPECT_EQ(getpath_home("home=/a\nhome = /b\n", getpath_c), "/b");
  EXPECT_EQ(getpath_home("home=/a\nhome = /b\n", getpath_py), "/a");
  EXPECT_EQ(getpath_home("HOME = /a\n", getpath_c), std::nullopt);
  EXPECT_EQ(getpath_home("HOME = /a\n", getpath_py), "/a");
  EXPECT_EQ(getpath_home("home\t=\t/a  \r\n", getpath_c), "/a  ");
  EXPECT_EQ(getpath_home("home\t=\t/a  \r\n", getpath_py), "/a");
  EXPECT_EQ(getpath_home("home =  /a\n", getpath_c), " /a");
  EXPECT_EQ(getpath_home("home = /a", getpath_c), std::nullopt);  // no line end: the scan stops
  EXPECT_EQ(getpath_home("home = /a", getpath_py), "/a");
  EXPECT_EQ(getpath_home("#home = /a\nhome = /b\n", getpath_c), "/b");
  EXPECT_EQ(getpath_home("home = /a\rhome = /b\n", getpath_c), "/a");
  EXPECT_EQ(getpath_home("home = /a\rhome = /b\n", getpath_py), "/a\rhome = /b");
  EXPECT_EQ(getpath_home(std::string("x\0\nhome = /a\n", 13), getpath_c), std::nullopt);
  EXPECT_EQ(getpath_home(std::string("x\0\nhome = /a\n", 13), getpath_py), std::nullopt);
  EXPECT_EQ(getpath_home(std::string("home = /a\0x\n", 12), getpath_py), "/a");
  EXPECT_EQ(getpath_home("#" + std::string(8190, 'x') + "\nhome = /a\n", getpath_c), std::nullopt);
  EXPECT_EQ(getpath_home("#" + std::string(8189, 'x') + "\nhome = /a\n", getpath_c), "/a");
  EXPECT_EQ(getpath_home("\ufeffhome = /a\n", getpath_c), std::nullopt);
  EXPECT_EQ(getpath_home("\ufeffhome = /a\n", getpath_py), std::nullopt);
  EXPECT_EQ(getpath_home("home =\n", getpath_c), std::nullopt);
  EXPECT_EQ(getpath_home("home =\n", getpath_py), "");
}

TEST(EnvPyvenvCfg, ReadsLinesKeysAndValuesAsPythonDoes) {
  auto cfg = parse_pyvenv_cfg(
      "home = /a\rHOME = /b\r\nx = 1\fy = 2\n"
      "pac\u212aage =\u00a0 v \u3000\x1c\n",
      "cfg");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->get("home"), "/a");
  EXPECT_EQ(cfg->last("home"), "/b");
  EXPECT_EQ(cfg->get("x"), "1\fy = 2");
  EXPECT_EQ(cfg->get("package"), "v");
  EXPECT_EQ(cfg->entries.size(), 4u);
  auto latin1 = parse_pyvenv_cfg("home = /opt/caf\xe9\n", "/v/pyvenv.cfg");
  ASSERT_FALSE(latin1);
  EXPECT_NE(latin1.error().message.find("/v/pyvenv.cfg is not UTF-8"), std::string::npos)
      << latin1.error().message;
}

}  // namespace
}  // namespace venvfix::env
