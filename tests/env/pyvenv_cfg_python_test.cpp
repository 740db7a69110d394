// pyvenv.cfg as the venv's own interpreter reads it. For every pyenv Python 3.8-3.13, a real
// venv (`python -m venv --without-pip`) gets pyvenv.cfg variants that a hand, another tool or an
// editor may write (a key missing or repeated, CR line ends, Unicode spaces, a BOM, bytes that
// are not UTF-8), and the site-packages venvfix reads must be the ones in the interpreter's
// sys.path; where the interpreter cannot start, venvfix must refuse the venv.
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

// `home` is the base interpreter's directory; `inc` the include-system-site-packages key.
std::vector<Variant> variants(const std::string& home) {
  const std::string h = "home = " + home + "\n";
  const std::string inc = "include-system-site-packages";
  return {
      {"the key absent (site.py's default is true)", h + "version = 3\n"},
      {"false, then true: the last wins", h + inc + " = false\n" + inc + " = true\n"},
      {"true, then false: the last wins", h + inc + " = true\n" + inc + " = false\n"},
      {"key and value upper case", h + "Include-System-Site-Packages = TRUE\n"},
      {"no spaces around '='", h + inc + "=false\n"},
      {"CR line ends", "home = " + home + "\r" + inc + " = false\r"},
      {"CRLF line ends", "home = " + home + "\r\n" + inc + " = false\r\n"},
      {"a CR inside a line ends it", h + inc + " = false\r" + inc + " = true\n"},
      {"a form feed does not end a line", h + inc + " = true\f" + inc + " = false\n"},
      {"U+0085 does not end a line", h + inc + " = true\u0085" + inc + " = false\n"},
      {"no-break spaces stripped", h + inc + " = \u00a0true\u00a0\n"},
      {"ideographic space stripped", h + inc + " =\u3000true\u3000\n"},
      {"ASCII separators stripped", h + inc + " = true\x1c\x1f\v\n"},
      {"the Kelvin sign lowercases to k", h + "include-system-site-pac\u212aages = false\n"},
      {"yes is not true", h + inc + " = yes\n"},
      {"a NUL in a line without '='", h + inc + " = false\n" + std::string(1, '\0') + "\n"},
      {"a BOM before the first key", "\ufeff" + h + inc + " = true\n"},
      {"home twice: the first wins", h + "home = /nonexistent/bin\n" + inc + " = true\n"},
      {"Latin-1 in a comment: the interpreter cannot start", h + "# caf\xe9\n" + inc + " = true\n"},
  };
}

// The site-packages directories in sys.path of the venv's interpreter, or nullopt when it fails.
std::optional<std::vector<std::string>> interpreter_site_packages(const fs::path& venv) {
  const auto out = run_command(shell_quote((venv / "bin" / "python").string()) +
                               " -c 'import json, sys; print(json.dumps([p for p in sys.path if "
                               "p.endswith(\"site-packages\")]))' 2>/dev/null");
  if (out.status != 0) return std::nullopt;
  return json::parse(out.out).get<std::vector<std::string>>();
}

class PyvenvCfgAgainstPython : public ::testing::TestWithParam<const char*> {};

TEST_P(PyvenvCfgAgainstPython, SitePackagesAreTheInterpretersForEveryVariant) {
  const fs::path python = venvfix::testing::pyenv_python(GetParam());
  if (python.empty()) GTEST_SKIP() << "no pyenv Python " << GetParam();
  auto dir = TempDir::create("venvfix-pyvenv-cfg-");
  ASSERT_TRUE(dir) << dir.error().message;
  const fs::path venv = dir->path() / "venv";
  ASSERT_EQ(run_command(shell_quote(python.string()) + " -m venv --without-pip " +
                        shell_quote(venv.string()))
                .status,
            0);
  for (const Variant& variant : variants(python.parent_path().string())) {
    SCOPED_TRACE(variant.name);
    write_text(venv / "pyvenv.cfg", variant.text);
    const auto expected = interpreter_site_packages(venv);
    auto opened = open_venv_at(venv);
    if (!expected) {
      EXPECT_FALSE(opened) << "the interpreter does not start, venvfix reads the venv";
      continue;
    }
    ASSERT_TRUE(opened) << opened.error().message;
    std::vector<std::string> read;
    for (const fs::path& site : opened->site_packages) read.push_back(site.string());
    EXPECT_EQ(read, *expected);
  }
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
