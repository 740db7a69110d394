// pyvenv.cfg as the venv's own interpreter reads it. For every pyenv Python 3.8-3.13, a real
// venv (`python -m venv --without-pip`) gets pyvenv.cfg variants that a hand, another tool or an
// editor may write (a key missing or repeated, CR line ends, Unicode spaces, a BOM, bytes that
// are not UTF-8), and the site-packages venvfix reads must be the ones in the interpreter's
// sys.path; where the interpreter cannot start, venvfix must refuse the venv.
#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "env/test_support.hpp"
#include "support/world_for.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::env {
namespace {

using nlohmann::json;
using test_support::run_command;
using test_support::shell_quote;
using test_support::write_text;

struct Variant {
  std::string name;
  std::string text;
};

// `real` is the base interpreter's directory, `alt` the bin directory of a second prefix whose
// lib/pythonX.Y leads to the same standard library. Where getpath reads a `home`, it is mostly
// `alt`: the interpreter's sys.path then names the second prefix, and a reading that missed the
// home would name the real one (where the interpreter falls back). `inc` is the
// include-system-site-packages key.
// `dotted` is a home whose ".." follows a symlink: read by the kernel it leads to one prefix,
// read as text (dropping the component before "..") to another; `dotted_text_only` leads to a
// prefix only when read as text.
std::vector<Variant> variants(const std::string& real, const std::string& alt,
                              const std::string& dotted, const std::string& dotted_text_only) {
  const std::string h = "home = " + alt + "\n";
  const std::string inc = "include-system-site-packages";
  const std::string yes = inc + " = true\n";
  return {
      {"the key absent (site.py's default is true)", h + "version = 3\n"},
      {"false, then true: the last wins", h + inc + " = false\n" + inc + " = true\n"},
      {"true, then false: the last wins", h + inc + " = true\n" + inc + " = false\n"},
      {"key and value upper case", h + "Include-System-Site-Packages = TRUE\n"},
      {"no spaces around '='", h + inc + "=false\n"},
      {"CR line ends", "home = " + alt + "\r" + inc + " = false\r"},
      {"CRLF line ends", "home = " + alt + "\r\n" + inc + " = false\r\n"},
      {"a CR inside a line ends it", h + inc + " = false\r" + inc + " = true\n"},
      {"a form feed does not end a line", h + inc + " = true\f" + inc + " = false\n"},
      {"U+0085 does not end a line", h + inc + " = true\u0085" + inc + " = false\n"},
      {"no-break spaces stripped", h + inc + " = \u00a0true\u00a0\n"},
      {"ideographic space stripped", h + inc + " =\u3000true\u3000\n"},
      {"ASCII separators stripped", h + inc + " = true\x1c\x1f\v\n"},
      {"the Kelvin sign lowercases to k", h + "include-system-site-pac\u212aages = false\n"},
      {"yes is not true", h + inc + " = yes\n"},
      {"a NUL in a line without '='", h + inc + " = false\n" + std::string(1, '\0') + "\n"},
      {"a BOM before the first key", "\ufeff" + h + yes},
      {"home twice: the first wins", h + "home = /nonexistent/bin\n" + yes},
      {"Latin-1 in a comment: the interpreter cannot start", h + "# caf\xe9\n" + yes},
      // Where getpath's readings of `home` part: 3.8-3.10 (C) and 3.11+ (getpath.py).
      {"home: the real prefix, then the second", "home = " + real + "\nhome = " + alt + "\n" + yes},
      {"home=: no blanks around '='", "home=" + alt + "\n" + yes},
      {"HOME: upper case", "HOME = " + alt + "\n" + yes},
      {"home: tabs around '='", "home\t=\t" + alt + "\n" + yes},
      {"home: two blanks after '='", "home =  " + alt + "\n" + yes},
      {"home: trailing blanks", "home = " + alt + "  \n" + yes},
      {"home: the last line, without a line end", yes + "home = " + alt},
      {"home: a comment line names the real prefix", "#home = " + real + "\n" + h + yes},
      {"home: a CR, then the real prefix", "home = " + alt + "\rhome = " + real + "\n" + yes},
      {"home: the real prefix, a CR, then the second",
       "home = " + real + "\rhome = " + alt + "\n" + yes},
      {"home: a NUL after it", "home = " + alt + std::string(1, '\0') + "x\n" + yes},
      {"home: a NUL on a line before it",
       "x" + std::string(1, '\0') + "\nhome = " + alt + "\n" + yes},
      {"home: a directory that does not exist", "home = /nonexistent/bin\n" + yes},
      {"home: '..' after a symlink", "home = " + dotted + "\n" + yes},
      {"home: '..' after a symlink, a prefix only as text",
       "home = " + dotted_text_only + "\n" + yes},
      {"home: '.' and '//' in it", "home = " + alt + "/.//\n" + yes},
      {"home: relative", "home = bin\n" + yes},
      {"home: after a line longer than 8 KiB",
       "#" + std::string(9000, 'x') + "\nhome = " + alt + "\n" + yes},
      {"home: before a 40 KB comment (3.11+ refuse to start)",
       "home = " + alt + "\n" + yes + "#" + std::string(40000, 'x') + "\n"},
  };
}

// The site-packages (and Debian's dist-packages) directories in sys.path of the venv's interpreter,
// or nullopt when it fails.
std::optional<std::vector<std::string>> interpreter_site_packages(const fs::path& venv) {
  const auto out = run_command(shell_quote((venv / "bin" / "python").string()) +
                               " -c 'import json, sys; print(json.dumps([p for p in sys.path if "
                               "p.endswith(\"-packages\")]))' 2>/dev/null");
  if (out.status != 0) return std::nullopt;
  return json::parse(out.out).get<std::vector<std::string>>();
}

// A second prefix beside the real one: bin/ and lib/pythonX.Y, a symlink to the real library.
fs::path make_second_prefix(const fs::path& at, const fs::path& real_prefix,
                            const std::string& lib_dir) {
  fs::create_directories(at / "bin");
  fs::create_directories(at / "lib");
  fs::create_directory_symlink(real_prefix / "lib" / lib_dir, at / "lib" / lib_dir);
  return at / "bin";
}

// The one thing venvfix cannot know: a venv of copies whose `home` leads nowhere runs on the
// prefix its interpreter was built with (compiled into it). venvfix then reads no base layer and
// warns; everything else must still agree.
bool only_the_built_in_prefix_is_missing(const std::vector<std::string>& read,
                                         std::vector<std::string> expected,
                                         const fs::path& built_in_site) {
  const auto built_in = std::find(expected.begin(), expected.end(), built_in_site.string());
  if (built_in == expected.end()) return false;
  expected.erase(built_in);
  return read == expected;
}

struct Layout {
  const char* name;
  const char* venv_option;
};

class PyvenvCfgAgainstPython : public ::testing::TestWithParam<const char*> {};

TEST_P(PyvenvCfgAgainstPython, SitePackagesAreTheInterpretersForEveryVariant) {
  const fs::path python = venvfix::testing::pyenv_python(GetParam());
  if (python.empty()) GTEST_SKIP() << "no pyenv Python " << GetParam();
  auto dir = TempDir::create("venvfix-pyvenv-cfg-");
  ASSERT_TRUE(dir) << dir.error().message;
  const std::string lib_dir = "python" + std::string(GetParam());
  const fs::path real_prefix = python.parent_path().parent_path();
  const fs::path built_in_site = real_prefix / "lib" / lib_dir / "site-packages";
  const fs::path alt = make_second_prefix(dir->path() / "second", real_prefix, lib_dir);
  // hop -> deep/inner: hop/.. is deep to the kernel, the temporary directory to a text reading.
  make_second_prefix(dir->path() / "deep" / "second", real_prefix, lib_dir);
  fs::create_directories(dir->path() / "deep" / "inner");
  fs::create_directory_symlink(dir->path() / "deep" / "inner", dir->path() / "hop");
  const std::string dotted = (dir->path() / "hop" / ".." / "second" / "bin").string();
  make_second_prefix(dir->path() / "third", real_prefix, lib_dir);  // no deep/third
  const std::string dotted_text_only = (dir->path() / "hop" / ".." / "third" / "bin").string();
  for (const Layout layout : {Layout{"symlinks", "--symlinks"}, Layout{"copies", "--copies"}}) {
    const fs::path venv = dir->path() / layout.name;
    ASSERT_EQ(run_command(shell_quote(python.string()) + " -m venv --without-pip " +
                          layout.venv_option + " " + shell_quote(venv.string()))
                  .status,
              0);
    int built_in_only = 0;
    for (const Variant& variant :
         variants(python.parent_path().string(), alt.string(), dotted, dotted_text_only)) {
      SCOPED_TRACE(std::string(layout.name) + ": " + variant.name);
      write_text(venv / "pyvenv.cfg", variant.text);
      const auto expected = interpreter_site_packages(venv);
      auto opened = open_venv_at(venv);
      if (!expected) {
        EXPECT_FALSE(opened) << "the interpreter does not start, venvfix reads the venv";
        continue;
      }
      if (!opened) {
        ADD_FAILURE() << "the interpreter starts, venvfix refuses: " << opened.error().message;
        continue;
      }
      std::vector<std::string> read;
      for (const fs::path& site : opened->site_packages) read.push_back(site.string());
      if (std::string_view(layout.name) == "copies" && read != *expected &&
          only_the_built_in_prefix_is_missing(read, *expected, built_in_site)) {
        ++built_in_only;
        continue;
      }
      EXPECT_EQ(read, *expected);
    }
    std::printf("Python %s, %s: %d variants ran on the built-in prefix venvfix cannot read\n",
                GetParam(), layout.name, built_in_only);
  }
}

// The paths pip installs into (sysconfig's purelib and platlib, as pip 21.3+ reads them) of
// the venv's interpreter, or nullopt when it fails.
std::optional<std::pair<std::string, std::string>> interpreter_install_paths(const fs::path& venv) {
  const auto out = run_command(shell_quote((venv / "bin" / "python").string()) +
                               " -c 'import json, sysconfig; p = sysconfig.get_paths(); "
                               "print(json.dumps([p[\"purelib\"], p[\"platlib\"]]))' 2>/dev/null");
  if (out.status != 0) return std::nullopt;
  const auto paths = json::parse(out.out).get<std::vector<std::string>>();
  return std::pair{paths.at(0), paths.at(1)};
}

enum class Maker { venv, virtualenv };

// Makes venvs of `python` with `maker`, of symlinks and of copies, with and without the system
// site-packages, in `dir`. venvfix must read the site-packages the interpreter's sys.path has,
// and write where pip would (sysconfig's purelib; platlib, when it is another existing
// directory).
void expect_read_as_the_interpreter_reads(const fs::path& python, Maker maker,
                                          const fs::path& dir) {
  const std::string make = maker == Maker::venv
                               ? shell_quote(python.string()) + " -m venv --without-pip "
                               : "/usr/bin/python3 -m virtualenv -q --no-seed --no-periodic-update "
                                 "-p " +
                                     shell_quote(python.string()) + " ";
  for (const char* layout : {"--symlinks", "--copies"}) {
    for (const char* system : {"", "--system-site-packages"}) {
      SCOPED_TRACE(make + layout + " " + system);
      const fs::path venv = dir / (std::string(layout + 2) + (*system ? "-system" : ""));
      const auto made =
          run_command(make + layout + " " + system + " " + shell_quote(venv.string()) + " 2>&1");
      ASSERT_EQ(made.status, 0) << made.out;
      const auto expected = interpreter_site_packages(venv);
      const auto install_paths = interpreter_install_paths(venv);
      ASSERT_TRUE(expected && install_paths) << "the venv's interpreter does not start";
      auto opened = open_venv_at(venv);
      ASSERT_TRUE(opened) << opened.error().message;
      std::vector<std::string> read;
      for (const fs::path& site : opened->site_packages) read.push_back(site.string());
      EXPECT_EQ(read, *expected);
      EXPECT_EQ(opened->purelib.string(), install_paths->first);
      if (fs::is_directory(install_paths->second) &&
          !fs::equivalent(install_paths->second, install_paths->first)) {
        EXPECT_EQ(opened->platlib.string(), install_paths->second);
      }
    }
  }
}

bool have_virtualenv() {
  return run_command("/usr/bin/python3 -m virtualenv --version >/dev/null 2>&1").status == 0;
}

// Venvs made by virtualenv (Debian's python3-virtualenv, not this repository's idea of its
// pyvenv.cfg).
TEST_P(PyvenvCfgAgainstPython, VirtualenvVenvsAreReadAsTheirInterpreterReadsThem) {
  const fs::path python = venvfix::testing::pyenv_python(GetParam());
  if (python.empty()) GTEST_SKIP() << "no pyenv Python " << GetParam();
  if (!have_virtualenv()) {
    GTEST_SKIP() << "virtualenv is not installed (scripts/setup.sh installs python3-virtualenv)";
  }
  auto dir = TempDir::create("venvfix-virtualenv-");
  ASSERT_TRUE(dir) << dir.error().message;
  expect_read_as_the_interpreter_reads(python, Maker::virtualenv, dir->path());
}

// Debian's own Python (/usr/bin/python3): its patched site.py lists dist-packages directories
// (/usr/local/lib/pythonX.Y/dist-packages, /usr/lib/python3/dist-packages) for a venv with the
// system site-packages, and its sysconfig has a posix_local scheme.
TEST(DebianPython, VenvsAndVirtualenvsAreReadAsTheirInterpreterReadsThem) {
  const fs::path python = "/usr/bin/python3";
  if (!fs::exists(python) ||
      run_command("/usr/bin/python3 -c 'import venv' 2>/dev/null").status != 0) {
    GTEST_SKIP() << "no Debian python3 with venv here";
  }
  auto dir = TempDir::create("venvfix-debian-python-");
  ASSERT_TRUE(dir) << dir.error().message;
  fs::create_directories(dir->path() / "venv");
  expect_read_as_the_interpreter_reads(python, Maker::venv, dir->path() / "venv");
  if (!have_virtualenv()) return;  // said by the pyenv test
  fs::create_directories(dir->path() / "virtualenv");
  expect_read_as_the_interpreter_reads(python, Maker::virtualenv, dir->path() / "virtualenv");
}

INSTANTIATE_TEST_SUITE_P(Pyenv, PyvenvCfgAgainstPython,
                         ::testing::Values("3.8", "3.9", "3.10", "3.11", "3.12", "3.13"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           std::string name = std::string("Python") + param.param;
                           std::erase(name, '.');
                           return name;
                         });

}  // namespace
}  // namespace venvfix::env
