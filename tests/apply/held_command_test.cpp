// Which scripts a HeldCommand starts early: only a "#!" line naming an absolute, executable
// python and nothing else (as pip and uv write console scripts).
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>

#include "venvfix/apply/held_command.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix::apply {
namespace {

class HeldCommandScripts : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-held-test-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(dir).value());
    m_python = m_dir->path() / "bin/python3.12";
    fs::create_directories(m_python.parent_path());
    write("bin/python3.12", "#!/bin/sh\n");
    fs::permissions(m_python, fs::perms::owner_all);
  }
  fs::path write(const std::string& name, const std::string& text) const {
    fs::path path = m_dir->path() / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::optional<TempDir> m_dir;
  fs::path m_python;
};

TEST_F(HeldCommandScripts, AConsoleScriptNamesItsInterpreter) {
  const std::string shebang = "#!" + m_python.string();
  EXPECT_EQ(python_script_interpreter(write("pip", shebang + "\nimport sys\n")), m_python.string());
  EXPECT_EQ(python_script_interpreter(write("crlf", shebang + "\r\nimport sys\n")),
            m_python.string());
}

TEST_F(HeldCommandScripts, AnythingElseIsRunAsUsual) {
  const std::string shebang = "#!" + m_python.string();
  EXPECT_FALSE(python_script_interpreter(write("env", "#!/usr/bin/env python3\n")));
  EXPECT_FALSE(python_script_interpreter(write("flags", shebang + " -E\n")));
  EXPECT_FALSE(python_script_interpreter(write("relative", "#!bin/python3.12\n")));
  EXPECT_FALSE(python_script_interpreter(write("shell", "#!/bin/sh\nexec python3 \"$@\"\n")));
  EXPECT_FALSE(python_script_interpreter(write("pythonic", "#!/bin/python-config\n")));
  EXPECT_FALSE(python_script_interpreter(write("elf", std::string("\x7f"
                                                                  "ELF\x02\x01",
                                                                  6))));
  EXPECT_FALSE(python_script_interpreter(write("empty", "")));
  EXPECT_FALSE(python_script_interpreter(write("no-newline", shebang)));
  EXPECT_FALSE(
      python_script_interpreter(write("long", "#!/" + std::string(300, 'x') + "/python\n")))
      << "longer than the kernel reads";
  EXPECT_FALSE(python_script_interpreter(m_dir->path() / "absent"));
  EXPECT_FALSE(
      python_script_interpreter(write("gone", "#!" + m_dir->path().string() + "/bin/python3.13\n")))
      << "an interpreter that is not there";
  fs::permissions(m_python, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_FALSE(python_script_interpreter(write("noexec", shebang + "\n")))
      << "an interpreter that cannot be run";
}

TEST_F(HeldCommandScripts, ACommandThatIsNoPathOrNoPythonScriptIsNotHeld) {
  EXPECT_FALSE(HeldCommand::start({}));
  EXPECT_FALSE(HeldCommand::start({"pip", "install", "x"})) << "looked up in PATH: not held";
  EXPECT_FALSE(HeldCommand::start({write("tool", "#!/bin/sh\n").string(), "install"}));
  EXPECT_FALSE(HeldCommand::start({write("tool", "#!/bin/sh\n").string(), "-m", "pip"}))
      << "-m pip, but not a python";
  EXPECT_FALSE(HeldCommand::start({m_python.string(), "-m", "venv"})) << "only pip's -m is held";
}

}  // namespace
}  // namespace venvfix::apply
