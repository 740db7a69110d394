// Which installer command lines the guard runs guarded. The read-only lists follow `pip --help`
// and `uv help`; everything else, unknown commands included, is guarded.
#include <gtest/gtest.h>

#include "venvfix/base/strings.hpp"
#include "venvfix/guard/guard.hpp"

namespace venvfix::guard {
namespace {

std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view w : split(text, ' ')) out.emplace_back(w);
  return out;
}

Effect pip(std::string_view line) {
  return classify(Tool::pip, words(line));
}
Effect uv(std::string_view line) {
  return classify(Tool::uv, words(line));
}

TEST(GuardClassify, PipCommandsThatChangeTheVenvAreGuarded) {
  for (const char* line :
       {"pip install x", "pip uninstall -y nvidia-cudnn-cu13", "pip3.12 install -r req.txt",
        "pip -q install x", "pip --log /tmp/l install x", "pip --cache-dir /c uninstall -y x",
        "pip --log=/tmp/l install x", "/v/.venvfix/guard/bin/pip install x",
        "python -m pip install x", "python3 -I -m pip uninstall -y x",
        "python -X utf8 -m pip install x", "pip frobnicate", "pip --no-such-option"}) {
    EXPECT_EQ(pip(line), Effect::changes_venv) << line;
  }
}

TEST(GuardClassify, ReadOnlyPipCommandsPassStraightThrough) {
  for (const char* line :
       {"pip list", "pip show torch", "pip freeze", "pip check", "pip --version", "pip -V",
        "pip help install", "pip download x -d /tmp", "pip wheel x", "pip --log /tmp/l list",
        "pip config list", "pip cache purge", "python -m pip list", "python -c print(1)",
        "python script.py install", "pip -h"}) {
    EXPECT_EQ(pip(line), Effect::read_only) << line;
  }
}

TEST(GuardClassify, UvCommandsByWhatTheyDoToTheEnvironment) {
  for (const char* line : {"uv pip install x", "uv pip uninstall x", "uv pip sync req.txt",
                           "uv --cache-dir /c pip install x", "uv sync", "uv add torch",
                           "uv remove torch", "uv run python", "uv venv", "uv frobnicate"}) {
    EXPECT_EQ(uv(line), Effect::changes_venv) << line;
  }
  for (const char* line :
       {"uv pip list", "uv pip show torch", "uv pip freeze", "uv lock", "uv --version", "uv",
        "uv tool list", "uv cache clean", "uv pip compile req.in", "uv --directory /p pip list"}) {
    EXPECT_EQ(uv(line), Effect::read_only) << line;
  }
}

TEST(GuardClassify, ToolAndShellNamesAreParsedOrRefused) {
  EXPECT_EQ(parse_tool("uv").value(), Tool::uv);
  auto bad = parse_tool("conda");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ExitCode::usage);
  EXPECT_EQ(parse_shell("fish").value(), Shell::fish);
  EXPECT_FALSE(parse_shell("tcsh"));
}

}  // namespace
}  // namespace venvfix::guard
