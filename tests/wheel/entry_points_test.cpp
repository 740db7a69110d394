// entry_points.txt parsing, pip's script list and distlib's launcher text, as table tests; and
// the in-memory reader the fuzz target uses, against the demo wheel.
#include <gtest/gtest.h>

#include "venvfix/wheel/wheel.hpp"
#include "wheel/entry_points.hpp"
#include "wheel/member_name.hpp"
#include "wheel/wheel_test_support.hpp"

namespace venvfix::wheel {
namespace {

std::vector<std::string> names(const std::vector<EntryPoint>& entries) {
  std::vector<std::string> out;
  out.reserve(entries.size());
  for (const EntryPoint& e : entries) out.push_back(e.name);
  return out;
}

TEST(WheelEntryPoints, ParsesSectionsAsImportlibDoes) {
  auto groups = detail::parse_entry_points(
      "# comment\nignored = before:section\n[console_scripts]\n  a = m.n:f  \nb=m:C.g [x, y]\n"
      "a = m:second\n\n[gui_scripts]\ng = m:gui\n[other]\nnot = a:script\n",
      "entry_points.txt");
  ASSERT_TRUE(groups) << groups.error().message;
  ASSERT_EQ(names(groups->console_scripts), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(groups->console_scripts[0].module, "m");  // the later `a` replaced the value
  EXPECT_EQ(groups->console_scripts[0].attr, "second");
  EXPECT_EQ(groups->console_scripts[1].attr, "C.g");
  EXPECT_EQ(names(groups->gui_scripts), (std::vector<std::string>{"g"}));
}

TEST(WheelEntryPoints, RefusesWhatPipCannotInstall) {
  for (const char* text : {"[console_scripts]\nnoequals\n", "[console_scripts]\nx = module\n",
                           "[console_scripts]\nx = a:b:c\n", "[console_scripts]\n../x = a:b\n",
                           "[console_scripts]\n.. = a:b\n", "[gui_scripts]\nx y = a:b\n"}) {
    auto groups = detail::parse_entry_points(text, "entry_points.txt");
    EXPECT_FALSE(groups) << text;
    if (!groups) {
      EXPECT_NE(groups.error().message.find("entry_points.txt"), std::string::npos);
    }
  }
}

TEST(WheelEntryPoints, PipAndEasyInstallGetVersionedScripts) {
  std::vector<EntryPoint> console = {{"pip", "pip._internal.cli.main", "main"},
                                     {"pip3", "pip._internal.cli.main", "main"},
                                     {"pip3.9", "pip._internal.cli.main", "main"},
                                     {"easy_install", "setuptools.command.easy_install", "main"},
                                     {"easy_install-3.9", "x", "y"},
                                     {"other", "m", "f"}};
  EXPECT_EQ(names(detail::console_scripts_to_generate(console, 3, 12)),
            (std::vector<std::string>{"pip", "pip3", "pip3.12", "easy_install", "easy_install-3.12",
                                      "other"}));
}

TEST(WheelEntryPoints, LauncherTextIsDistlibs) {
  EntryPoint entry{"tool", "pkg.cli", "Main.run"};
  EXPECT_EQ(detail::launcher_script("/v/bin/python", entry),
            "#!/v/bin/python\n# -*- coding: utf-8 -*-\nimport re\nimport sys\n"
            "from pkg.cli import Main\nif __name__ == '__main__':\n"
            "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
            "    sys.exit(Main.run())\n");
  // A space or more than 127 bytes: distlib's /bin/sh trampoline.
  EXPECT_EQ(detail::launcher_shebang("/a b/python"),
            "#!/bin/sh\n'''exec' \"/a b/python\" \"$0\" \"$@\"\n' '''\n");
  std::string long_path = "/" + std::string(130, 'x') + "/python";
  EXPECT_EQ(detail::launcher_shebang(long_path),
            "#!/bin/sh\n'''exec' " + long_path + " \"$0\" \"$@\"\n' '''\n");
  EXPECT_EQ(detail::launcher_shebang("/" + std::string(120, 'x')),
            "#!/" + std::string(120, 'x') + "\n");
}

TEST(WheelMemberName, RefusesUnsafeNames) {
  for (const char* bad : {"", "/abs", "a/../b", "..", "a/./b", "a//b", "a\\b", "a\nb", "a/\x7f"}) {
    EXPECT_TRUE(detail::unsafe_name_reason(bad).has_value()) << bad;
  }
  for (const char* good : {"a", "a/b.py", "pkg-1.0.data/scripts/x", "..a/b..", "caf\xc3\xa9.py"}) {
    EXPECT_FALSE(detail::unsafe_name_reason(good).has_value()) << good;
  }
}

TEST(WheelReadBytes, InMemoryReadAndCheckAgreeWithTheFile) {
  fs::path wheel = testing::test_wheels() / "demo_pkg-1.0-py3-none-any.whl";
  auto bytes = read_file(wheel);
  ASSERT_TRUE(bytes);
  std::span<const std::byte> data(reinterpret_cast<const std::byte*>(bytes->data()), bytes->size());
  auto from_memory = read_wheel_bytes(data, wheel.filename().string());
  ASSERT_TRUE(from_memory) << from_memory.error().message;
  auto from_file = read_wheel(wheel);
  ASSERT_TRUE(from_file);
  EXPECT_EQ(from_memory->members.size(), from_file->members.size());
  EXPECT_EQ(from_memory->dist_info, "demo_pkg-1.0.dist-info");
  EXPECT_TRUE(from_memory->root_is_purelib);
  EXPECT_EQ(names(from_memory->console_scripts),
            (std::vector<std::string>{"democli", "demo-tool"}));
  EXPECT_TRUE(check_wheel_bytes(*from_memory, data));
  // One flipped byte inside a stored or deflated member: refused by CRC or by hash.
  std::string corrupt = *bytes;
  std::size_t at = corrupt.find("VERSION");
  if (at == std::string::npos) at = 40;  // deflated: flip a byte of the first member's data
  corrupt[at] = static_cast<char>(corrupt[at] ^ 0x55);
  std::span<const std::byte> bad(reinterpret_cast<const std::byte*>(corrupt.data()),
                                 corrupt.size());
  auto reread = read_wheel_bytes(bad, wheel.filename().string());
  EXPECT_TRUE(!reread || !check_wheel_bytes(*reread, bad));
}

}  // namespace
}  // namespace venvfix::wheel
