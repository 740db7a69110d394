// Compares supported_tags() with `pip debug --verbose`'s compatible tags for the python3 on
// PATH and this host's glibc. Read-only: pip debug changes nothing.
#include <gnu/libc-version.h>
#include <gtest/gtest.h>
#include <sys/utsname.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "pep/crosscheck_support.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/pep/tags.hpp"

namespace venvfix::pep {
namespace {

TEST(PepTagsCrossCheck, MatchesPipDebug) {
  auto python = testing::find_python3();
  if (!python) GTEST_SKIP() << "python3 is not on PATH, so there is no pip to compare with";
  auto dir = TempDir::create("venvfix-pep-tags-");
  ASSERT_TRUE(dir);
  std::string out = (dir->path() / "debug.txt").string();
  std::string info = (dir->path() / "info.txt").string();
  // The interpreter's version and whether it is CPython, from the interpreter itself.
  std::string command =
      testing::shell_quote(python->string()) +
      " -I -c 'import sys; print(sys.implementation.name, "
      "sys.version_info[0], sys.version_info[1])' > " +
      testing::shell_quote(info) + " && cd " + testing::shell_quote(dir->path().string()) +
      " && PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_CONFIG_FILE=/dev/null " +
      testing::shell_quote(python->string()) + " -I -m pip debug --verbose > " +
      testing::shell_quote(out) + " 2>/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << "pip debug failed: " << command;

  std::ifstream info_file(info);
  std::string implementation;
  int major = 0;
  int minor = 0;
  info_file >> implementation >> major >> minor;
  if (implementation != "cpython")
    GTEST_SKIP() << "python3 is " << implementation << ", not CPython";

  std::ifstream debug(out);
  std::vector<std::string> pip_tags;
  bool in_tags = false;
  for (std::string line; std::getline(debug, line);) {
    if (line.rfind("Compatible tags:", 0) == 0) {
      in_tags = true;
      continue;
    }
    if (in_tags) {
      if (line.rfind("  ", 0) != 0) break;
      pip_tags.emplace_back(trim(line));
    }
  }
  ASSERT_FALSE(pip_tags.empty()) << "no 'Compatible tags:' section in pip debug output";

  utsname uts{};
  ASSERT_EQ(uname(&uts), 0);
  int glibc_major = 0;
  int glibc_minor = 0;
  ASSERT_EQ(std::sscanf(gnu_get_libc_version(), "%d.%d", &glibc_major, &glibc_minor), 2);
  TargetPython target{major, minor, "cp", uts.machine, {{glibc_major, glibc_minor}}, {}, ""};

  std::vector<std::string> mine;
  for (const auto& tag : supported_tags(target)) mine.push_back(tag.to_string());
  ASSERT_EQ(mine.size(), pip_tags.size());
  for (std::size_t i = 0; i < mine.size(); ++i) {
    ASSERT_EQ(mine[i], pip_tags[i]) << "first difference at index " << i;
  }
  std::cout << "[ pip tags ] cp" << major << minor << " " << uts.machine << " glibc " << glibc_major
            << "." << glibc_minor << ": " << mine.size() << " tags, identical\n";
}

}  // namespace
}  // namespace venvfix::pep
