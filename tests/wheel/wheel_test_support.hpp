// Shared by the wheel tests: the wheels make_wheels.py builds (once per process), the bundled
// pip and setuptools wheels, and a fingerprint of a directory tree.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "env/test_support.hpp"
#include "support/paths.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/wheel/wheel.hpp"

namespace venvfix::wheel::testing {

using test_support::run_command;
using test_support::shell_quote;

// The directory with every wheel of make_wheels.py, built on first use. It is removed when the
// process that made it exits, and only by that process: a forked child that calls exit() runs the
// same static destructors and must not delete its parent's wheels.
class TestWheelsDir {
 public:
  TestWheelsDir() : m_owner(::getpid()) {
    std::string pattern = (fs::temp_directory_path() / "venvfix-wheels-XXXXXX").string();
    EXPECT_NE(::mkdtemp(pattern.data()), nullptr) << pattern << ": " << errno_message(errno);
    m_path = pattern;
    auto out = run_command(
        "python3 " +
        shell_quote(venvfix::testing::source_dir().string() + "/tests/wheel/make_wheels.py") + " " +
        shell_quote(m_path.string()));
    EXPECT_EQ(out.status, 0) << out.out;
  }
  TestWheelsDir(const TestWheelsDir&) = delete;
  TestWheelsDir& operator=(const TestWheelsDir&) = delete;
  ~TestWheelsDir() {
    if (::getpid() != m_owner) return;
    std::error_code ignored;
    fs::remove_all(m_path, ignored);
  }

  const fs::path& path() const { return m_path; }

 private:
  pid_t m_owner;
  fs::path m_path;
};

inline const fs::path& test_wheels() {
  static const TestWheelsDir dir;
  return dir.path();
}

// ensurepip's bundled wheel of `project` ("pip", "setuptools") for the machine's python3.
inline fs::path bundled_wheel(const std::string& project) {
  auto out = run_command(
      "python3 -c 'import ensurepip, os, sys; p = ensurepip._get_packages()[sys.argv[1]]; "
      "print(os.path.join(os.path.dirname(ensurepip.__file__), \"_bundled\", p.wheel_name))' " +
      project);
  while (!out.out.empty() && out.out.back() == '\n') out.out.pop_back();
  return out.out;
}

struct TreeFile {
  std::uint32_t mode = 0;
  std::string content;
  bool operator==(const TreeFile&) const = default;
};
// Every regular file and symlink (content: "-> target") under `root`, by relative path.
inline std::map<std::string, TreeFile> tree_of(const fs::path& root) {
  std::map<std::string, TreeFile> out;
  if (!fs::exists(root)) return out;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0) continue;
    std::string rel = entry.path().lexically_relative(root).generic_string();
    if (S_ISDIR(st.st_mode)) {
      out[rel + "/"] = TreeFile{st.st_mode & 07777u, ""};
    } else if (S_ISLNK(st.st_mode)) {
      out[rel] = TreeFile{0, "-> " + fs::read_symlink(entry.path()).string()};
    } else {
      auto text = read_file(entry.path(), 1u << 30);
      out[rel] = TreeFile{st.st_mode & 07777u, text ? *text : std::string("<unreadable>")};
    }
  }
  return out;
}

inline std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

// What one install_wheel call staged: its result and the tree it wrote.
struct Staged {
  InstallResult result;
  std::map<std::string, TreeFile> tree;
};

// A temporary directory holding a copy of the template venv; stage() installs a wheel into a
// new staging directory there ("staging-0", "staging-1", ...).
class StagingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-staging-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(*dir));
    ASSERT_TRUE(test_support::copy_of_template_venv(m_dir->path() / "venv"));
    auto venv = env::open_venv_at(m_dir->path() / "venv");
    ASSERT_TRUE(venv) << venv.error().message;
    m_venv = *venv;
  }

  Result<Staged> stage(const fs::path& wheel, const InstallOptions& options) {
    fs::path staging = m_dir->path() / ("staging-" + std::to_string(m_count++));
    fs::create_directories(staging);
    VENVFIX_TRY_ASSIGN(InstallResult result, install_wheel(wheel, m_venv, staging, options));
    return Staged{std::move(result), tree_of(staging)};
  }

  std::optional<TempDir> m_dir;
  env::Venv m_venv;
  int m_count = 0;
};

}  // namespace venvfix::wheel::testing
