// Environments that are not venvs: Python prefixes (plain, Debian-style, `pip install --prefix`
// trees), --python, and the base layer of include-system-site-packages venvs.
#include <gtest/gtest.h>

#include "env/test_support.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::env {
namespace {

using test_support::write_text;

class EnvPrefix : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-prefix-");
    ASSERT_TRUE(dir) << dir.error().message;
    m_dir.emplace(std::move(*dir));
  }
  fs::path dir() const { return m_dir->path(); }
  // A standard library as an installed CPython has it: lib/pythonX.Y/os.py and site.py.
  void stdlib(const fs::path& prefix, const std::string& lib, std::string_view site_py = "") {
    write_text(prefix / "lib" / lib / "os.py", "# os\n");
    write_text(prefix / "lib" / lib / "site.py", site_py);
  }
  std::optional<TempDir> m_dir;
};

TEST_F(EnvPrefix, PlainPrefixLikeUsrLocal) {
  const fs::path root = dir() / "usr-local";
  stdlib(root, "python3.12", "def getsitepackages(): pass\n");
  fs::create_directories(root / "lib/python3.12/site-packages");
  fs::create_directories(root / "lib64/python3.12/site-packages");
  auto env = open_venv_at(root);
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_EQ(env->kind, EnvKind::prefix);
  EXPECT_EQ(env->python.minor, 12);
  ASSERT_EQ(env->site_packages.size(), 2u);
  EXPECT_EQ(env->site_packages[0], root / "lib/python3.12/site-packages");
  EXPECT_EQ(env->site_packages[1], root / "lib64/python3.12/site-packages");
  EXPECT_EQ(env->purelib, env->site_packages[0]);
  EXPECT_EQ(env->platlib, env->site_packages[1]);
  EXPECT_TRUE(env->system_site_packages.empty());
  EXPECT_EQ(env->state_dir(), root / ".venvfix");  // writable: as for a venv
}

// Debian's site.py lists dist-packages: local/…/dist-packages (pip), lib/python3/dist-packages
// and lib/pythonX.Y/dist-packages (apt), in that order; pip installs into the first.
TEST_F(EnvPrefix, DebianSitePyGivesDistPackagesInItsOrder) {
  const fs::path debian_site = "/usr/lib/python3.11/site.py";
  auto text = read_file(debian_site);
  if (!text || text->find("\"dist-packages\"") == std::string::npos) {
    GTEST_SKIP() << "no Debian-patched " << debian_site << " on this machine";
  }
  const fs::path root = dir() / "usr";
  stdlib(root, "python3.11", *text);
  for (const char* site : {"local/lib/python3.11/dist-packages", "lib/python3/dist-packages",
                           "lib/python3.11/dist-packages"}) {
    fs::create_directories(root / site);
  }
  auto env = open_venv_at(root);
  ASSERT_TRUE(env) << env.error().message;
  ASSERT_EQ(env->site_packages.size(), 3u);
  EXPECT_EQ(env->site_packages[0], root / "local/lib/python3.11/dist-packages");
  EXPECT_EQ(env->site_packages[1], root / "lib/python3/dist-packages");
  EXPECT_EQ(env->site_packages[2], root / "lib/python3.11/dist-packages");
  EXPECT_EQ(env->purelib, env->site_packages[0]);
  EXPECT_FALSE(env->is_system_site(env->site_packages[0]));
  EXPECT_TRUE(env->is_system_site(env->site_packages[1]));
  EXPECT_TRUE(env->is_system_site(env->site_packages[2]));
}

// A `pip install --prefix` tree: no standard library, bin/python3 links to the interpreter
// (whose name says the version), and several lib/pythonX.Y directories.
TEST_F(EnvPrefix, PipPrefixTreeTakesTheVersionFromItsInterpreterLink) {
  const fs::path interpreter = dir() / "python-home";
  stdlib(interpreter, "python3.12");
  write_text(interpreter / "bin/python3.12", "");
  const fs::path root = dir() / "tree";
  fs::create_directories(root / "lib/python3.11/site-packages");
  fs::create_directories(root / "lib/python3.12/site-packages");
  fs::create_directories(root / "bin");
  auto ambiguous = open_venv_at(root);
  ASSERT_FALSE(ambiguous);
  EXPECT_EQ(ambiguous.error().code, ExitCode::usage);
  EXPECT_NE(ambiguous.error().message.find("several (3.11, 3.12)"), std::string::npos)
      << ambiguous.error().message;
  fs::create_symlink(interpreter / "bin/python3.12", root / "bin/python3");
  auto env = open_venv_at(root);
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_EQ(env->lib_dir_name, "python3.12");
  ASSERT_EQ(env->site_packages.size(), 1u);
  EXPECT_EQ(env->site_packages[0], root / "lib/python3.12/site-packages");
}

TEST_F(EnvPrefix, LayoutsThatAreNotSupportedSaySo) {
  fs::create_directories(dir() / "empty");
  auto empty = open_venv_at(dir() / "empty");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("no pyvenv.cfg"), std::string::npos);
  EXPECT_NE(empty.error().message.find("not a Python environment"), std::string::npos);
  // Debian's /usr/local: dist-packages of /usr's interpreter, no interpreter of its own.
  fs::create_directories(dir() / "local/lib/python3.11/dist-packages");
  auto local = open_venv_at(dir() / "local");
  ASSERT_FALSE(local);
  EXPECT_EQ(local.error().code, ExitCode::usage);
  EXPECT_NE(local.error().message.find("not supported yet"), std::string::npos)
      << local.error().message;
  EXPECT_NE(local.error().message.find("--python"), std::string::npos);
}

TEST_F(EnvPrefix, PythonOptionResolvesAnInterpreterWithoutRunningIt) {
  // A real interpreter of this machine, read only: its prefix holds its standard library.
  const fs::path real = "/root/.pyenv/versions/3.12.1/bin/python3.12";
  if (!fs::exists(real)) GTEST_SKIP() << real << " is not installed";
  const fs::path link = dir() / "bin/python3";
  fs::create_directories(link.parent_path());
  fs::create_symlink(real, link);
  auto env = open_python(link);
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_EQ(env->root, "/root/.pyenv/versions/3.12.1");
  EXPECT_EQ(env->kind, EnvKind::prefix);
  EXPECT_EQ(env->lib_dir_name, "python3.12");
  ASSERT_FALSE(env->site_packages.empty());
  EXPECT_EQ(env->site_packages[0], "/root/.pyenv/versions/3.12.1/lib/python3.12/site-packages");

  // A venv's interpreter is that venv (pyvenv.cfg one directory up).
  const fs::path venv = dir() / "v";
  ASSERT_TRUE(test_support::make_venv(venv));
  auto of_venv = open_python(venv / "bin/python");
  ASSERT_TRUE(of_venv) << of_venv.error().message;
  EXPECT_EQ(of_venv->root, venv);
  EXPECT_EQ(of_venv->kind, EnvKind::venv);

  // A shim (a script) cannot be resolved without running it.
  write_text(dir() / "shim/python3", "#!/bin/sh\nexec python3 \"$@\"\n");
  auto shim = open_python(dir() / "shim/python3");
  ASSERT_FALSE(shim);
  EXPECT_EQ(shim.error().code, ExitCode::usage);
  EXPECT_NE(shim.error().message.find("is a script"), std::string::npos) << shim.error().message;
  auto missing = open_python(dir() / "nowhere/python3");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no such interpreter"), std::string::npos);
}

// include-system-site-packages = true: the base prefix (above pyvenv.cfg's home) follows the
// venv's own site-packages, as Layer::base.
TEST_F(EnvPrefix, SystemSitePackagesVenvAddsTheBaseLayer) {
  const fs::path base = dir() / "base";
  stdlib(base, "python3.12");
  fs::create_directories(base / "lib/python3.12/site-packages");
  const fs::path root = dir() / "venv";
  write_text(root / "pyvenv.cfg", "home = " + (base / "bin").string() +
                                      "\ninclude-system-site-packages = true\nversion = 3.12.4\n");
  fs::create_directories(root / "lib/python3.12/site-packages");
  auto venv = open_venv_at(root);
  ASSERT_TRUE(venv) << venv.error().message;
  EXPECT_EQ(venv->kind, EnvKind::venv);
  ASSERT_EQ(venv->site_packages.size(), 2u);
  EXPECT_EQ(venv->site_packages[0], root / "lib/python3.12/site-packages");
  EXPECT_EQ(venv->site_packages[1], base / "lib/python3.12/site-packages");
  EXPECT_EQ(venv->layer_of(venv->site_packages[0]), Layer::own);
  EXPECT_EQ(venv->layer_of(venv->site_packages[1]), Layer::base);
  EXPECT_EQ(venv->base_prefix, base);
  EXPECT_EQ(venv->purelib, venv->site_packages[0]);  // pip writes into the venv

  write_text(root / "pyvenv.cfg", "home = " + (base / "bin").string() +
                                      "\ninclude-system-site-packages = false\nversion = 3.12.4\n");
  auto isolated = open_venv_at(root);
  ASSERT_TRUE(isolated) << isolated.error().message;
  EXPECT_EQ(isolated->site_packages.size(), 1u);
}

}  // namespace
}  // namespace venvfix::env
