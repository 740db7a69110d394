// pip as a peer: the tree install_wheel stages equals, file for file, mode for mode and byte for
// byte, what `pip install --no-deps --no-compile` installs into a fresh venv from the same wheel
// (RECORD rows too), except INSTALLER's content and pip's direct_url.json. Wheels: ensurepip's
// bundled pip and setuptools, and the demo wheel of make_wheels.py (every .data scheme key,
// `#!python` scripts, an executable member, console and gui entry points, a setuptools wrapper).
// Then the whole story at once: the bundled wheels and the test world's wheels installed into
// one venv by pip and into another by install_wheel (parallel unpack) and a move into place, as
// a transaction does; the two venvs must be the same tree. Wheels with non-ASCII member names
// (UTF-8 flagged, and CP437 without the flag) install the same under LANG=C and LC_ALL=C.UTF-8.
#include <gtest/gtest.h>

#include <algorithm>
#include <clocale>
#include <set>
#include <sstream>

#include "support/world.hpp"
#include "venvfix/env/host.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/pep/wheel_filename.hpp"
#include "venvfix/wheel/wheel.hpp"
#include "wheel/wheel_test_support.hpp"

namespace venvfix::wheel {
namespace {

using testing::TreeFile;

// The newest wheel of each project in the test world, leaving out any wheel that would install
// a file another chosen wheel installs (pip would let the later one win; a transaction would
// replace it: a different story, told by the txn tests).
// sys.executable of the machine's python3, shell-quoted.
std::string host_interpreter() {
  auto result = testing::run_command("python3 -c 'import sys; print(sys.executable)'");
  std::string path = result.out;
  while (!path.empty() && (path.back() == '\n' || path.back() == '\r')) path.pop_back();
  return testing::shell_quote(path.empty() ? std::string("python3") : path);
}

std::vector<fs::path> world_wheels_without_overlap() {
  std::map<std::string, std::pair<pep::Version, fs::path>> newest;
  for (const auto& entry : fs::directory_iterator(venvfix::testing::test_world().wheels_dir)) {
    if (entry.path().extension() != ".whl") continue;
    auto name = pep::WheelFilename::parse(entry.path().filename().string());
    if (!name) continue;
    // pip refuses a wheel for another machine (the world serves aarch64-only versions too).
    static const std::string k_arch_suffix = "_" + env::detect_host().arch;
    bool installable = std::any_of(
        name->platform_tags.begin(), name->platform_tags.end(),
        [](const std::string& tag) { return tag == "any" || tag.ends_with(k_arch_suffix); });
    if (!installable) continue;
    auto [it, inserted] = newest.try_emplace(name->normalized_name, name->version, entry.path());
    if (!inserted && it->second.first < name->version) it->second = {name->version, entry.path()};
  }
  std::vector<fs::path> out;
  std::set<std::string> claimed;
  for (const auto& [project, chosen] : newest) {
    // The interpreter's bundled pip and setuptools are installed beside these: a world wheel of
    // the same project would make pip refuse the whole command (two versions of one project).
    if (project == "pip" || project == "setuptools") continue;
    auto contents = read_wheel(chosen.second);
    if (!contents) continue;
    std::vector<std::string> paths;
    for (const WheelMember& member : contents->members) {
      std::string_view name = member.name;
      std::string_view top = name.substr(0, name.find('/'));
      if (top.ends_with(".dist-info")) continue;
      if (top.ends_with(".data")) {
        std::string_view rest = name.substr(top.size() + 1);
        std::string_view key = rest.substr(0, rest.find('/'));
        rest = rest.substr(key.size() + 1);
        paths.push_back((key == "purelib" || key == "platlib" ? "lib/" : std::string(key) + "/") +
                        std::string(rest));
      } else {
        paths.push_back("lib/" + std::string(name));
      }
    }
    if (std::any_of(paths.begin(), paths.end(),
                    [&](const std::string& p) { return claimed.count(p) != 0; })) {
      continue;
    }
    claimed.insert(paths.begin(), paths.end());
    out.push_back(chosen.second);
  }
  return out;
}

struct Case {
  std::string label;
  fs::path wheel;
  fs::path venv;
  std::map<std::string, TreeFile> baseline;
  // The locale pip runs under ("LANG=C", "LC_ALL=C.UTF-8") and that this process has while
  // install_wheel reads the wheel (setlocale); empty: as inherited.
  std::string locale_env;
  std::string process_locale;
};

// Sets this process's locale for one scope (the wheel reader must not depend on it).
class ProcessLocale {
 public:
  explicit ProcessLocale(const std::string& name) {
    if (name.empty()) return;
    m_previous = std::setlocale(LC_ALL, nullptr);
    EXPECT_NE(std::setlocale(LC_ALL, name.c_str()), nullptr) << name;
  }
  ~ProcessLocale() {
    if (!m_previous.empty()) std::setlocale(LC_ALL, m_previous.c_str());
  }
  ProcessLocale(const ProcessLocale&) = delete;
  ProcessLocale& operator=(const ProcessLocale&) = delete;

 private:
  std::string m_previous;
};

class WheelPipParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = TempDir::create("venvfix-parity-");
    ASSERT_TRUE(dir);
    s_dir = new TempDir(std::move(*dir));
    s_cases = new std::vector<Case>{
        {"pip", testing::bundled_wheel("pip"), {}, {}, "", ""},
        {"setuptools", testing::bundled_wheel("setuptools"), {}, {}, "", ""},
        {"demo", testing::test_wheels() / "demo_pkg-1.0-py3-none-any.whl", {}, {}, "", ""},
        // Non-ASCII member names: UTF-8 flagged (as zipfile writes them) and CP437 (no flag),
        // under the C locale and a UTF-8 one, for pip and for this process alike.
        {"unicode-lang-c",
         testing::test_wheels() / "unicode_pkg-1.0-py3-none-any.whl",
         {},
         {},
         "env -u LC_ALL -u LC_CTYPE LANG=C",
         "C"},
        {"unicode-lc-all-utf8",
         testing::test_wheels() / "unicode_pkg-1.0-py3-none-any.whl",
         {},
         {},
         "env LC_ALL=C.UTF-8",
         "C.UTF-8"},
        {"cp437-lang-c",
         testing::test_wheels() / "cp437/unicode_pkg-1.0-py3-none-any.whl",
         {},
         {},
         "env -u LC_ALL -u LC_CTYPE LANG=C",
         "C"},
        {"cp437-lc-all-utf8",
         testing::test_wheels() / "cp437/unicode_pkg-1.0-py3-none-any.whl",
         {},
         {},
         "env LC_ALL=C.UTF-8",
         "C.UTF-8"},
        // NFD names and NFC/NFD twins: the central directory's bytes, never normalised.
        {"nfd-lang-c",
         testing::test_wheels() / "nfd/unicode_pkg-1.0-py3-none-any.whl",
         {},
         {},
         "env -u LC_ALL -u LC_CTYPE LANG=C",
         "C"},
        {"nfc-nfd-lang-c",
         testing::test_wheels() / "nfc-nfd/unicode_pkg-1.0-py3-none-any.whl",
         {},
         {},
         "env -u LC_ALL -u LC_CTYPE LANG=C",
         "C"}};
    // The machine's interpreter itself, not pyenv's shim: the shim's `pip install` hook rehashes
    // pyenv's shims, and nine of those at once race on the shim directory and fail.
    std::string host_python = host_interpreter();
    std::string script = "set -e; pids=''; ";
    for (Case& c : *s_cases) {
      ASSERT_TRUE(fs::exists(c.wheel)) << c.wheel;
      c.venv = s_dir->path() / ("venv-" + c.label);
      ASSERT_TRUE(test_support::make_venv(c.venv));
      c.baseline = testing::tree_of(c.venv);
      // The machine's pip drives the venv's interpreter (--python): sys.executable is the
      // venv's python, as when the venv's own pip runs.
      script += c.locale_env + " " + host_python + " -m pip --python " +
                testing::shell_quote((c.venv / "bin/python").string()) +
                " --disable-pip-version-check --no-input -q install --no-deps --no-compile " +
                testing::shell_quote(c.wheel.string()) + " >&2 & pids=\"$pids $!\"; ";
    }
    // And every wheel at once into one venv (WorldAndBundledWheelsInOneVenvMovedIntoPlace).
    s_all_wheels = new std::vector<fs::path>{testing::bundled_wheel("pip"),
                                             testing::bundled_wheel("setuptools")};
    for (fs::path& wheel : world_wheels_without_overlap())
      s_all_wheels->push_back(std::move(wheel));
    ASSERT_TRUE(test_support::make_venv(s_dir->path() / "venv-all"));
    script += host_python + " -m pip --python " +
              testing::shell_quote((s_dir->path() / "venv-all/bin/python").string()) +
              " --disable-pip-version-check --no-input -q install --no-deps --no-compile";
    for (const fs::path& wheel : *s_all_wheels)
      script += " " + testing::shell_quote(wheel.string());
    script += " >&2 & pids=\"$pids $!\"; ";
    script += "for p in $pids; do wait $p; done";
    ASSERT_EQ(testing::run_command("sh -c " + testing::shell_quote(script)).status, 0);
  }
  static void TearDownTestSuite() {
    delete s_all_wheels;
    delete s_cases;
    delete s_dir;
  }

  static void check_parity(const Case& c) {
    auto venv = env::open_venv_at(c.venv);
    ASSERT_TRUE(venv) << venv.error().message;
    fs::path staging = s_dir->path() / ("staging-" + c.label);
    fs::create_directories(staging);
    InstallOptions options;
    options.requested = Requested::yes;  // pip marks a requirement given on its command line
    auto result = [&] {
      ProcessLocale locale(c.process_locale);
      return install_wheel(c.wheel, *venv, staging, options);
    }();
    ASSERT_TRUE(result) << result.error().message;

    // pip's install: everything in the venv that was not there before.
    std::map<std::string, TreeFile> pip_tree;
    for (auto& [path, file] : testing::tree_of(c.venv)) {
      auto it = c.baseline.find(path);
      if (path.ends_with("/") || (it != c.baseline.end() && it->second == file)) continue;
      pip_tree[path] = file;
    }
    std::map<std::string, TreeFile> ours;
    for (auto& [path, file] : testing::tree_of(staging)) {
      if (!path.ends_with("/")) ours[path] = file;
    }
    const std::string info = result->dist_info;
    ASSERT_EQ(ours.at(info + "/INSTALLER").content, "venvfix\n");
    ASSERT_EQ(pip_tree.at(info + "/INSTALLER").content, "pip\n");
    // RECORD: the same rows but INSTALLER's and direct_url.json's.
    auto rows_without = [&](const std::string& text) {
      std::string out;
      std::istringstream in(text);
      std::string line;
      while (std::getline(in, line)) {
        if (line.starts_with(info.substr(info.rfind('/') + 1) + "/INSTALLER,") ||
            line.starts_with(info.substr(info.rfind('/') + 1) + "/direct_url.json,")) {
          continue;
        }
        out += line + "\n";
      }
      return out;
    };
    EXPECT_EQ(rows_without(ours.at(info + "/RECORD").content),
              rows_without(pip_tree.at(info + "/RECORD").content));
    EXPECT_EQ(ours.at(info + "/RECORD").mode, pip_tree.at(info + "/RECORD").mode);
    for (const char* file : {"/INSTALLER", "/RECORD", "/direct_url.json"}) {
      ours.erase(info + file);
      pip_tree.erase(info + file);
    }
    std::vector<std::string> only_ours, only_pip, different;
    for (const auto& [path, file] : ours) {
      auto it = pip_tree.find(path);
      if (it == pip_tree.end()) {
        only_ours.push_back(path);
      } else if (!(it->second == file)) {
        different.push_back(path +
                            fmt::format(" (mode {:o} vs pip {:o})", file.mode, it->second.mode));
      }
    }
    for (const auto& [path, file] : pip_tree) {
      if (ours.count(path) == 0) only_pip.push_back(path);
    }
    EXPECT_TRUE(only_ours.empty()) << "only venvfix: " << testing::join(only_ours, ", ");
    EXPECT_TRUE(only_pip.empty()) << "only pip: " << testing::join(only_pip, ", ");
    EXPECT_TRUE(different.empty()) << "different: " << testing::join(different, ", ");
    EXPECT_GT(ours.size(), 3u);

    // The result describes the staged tree exactly.
    std::map<std::string, TreeFile> staged = testing::tree_of(staging);
    std::size_t files = 0;
    for (const auto& [path, file] : staged) files += path.ends_with("/") ? 0 : 1;
    EXPECT_EQ(result->files.size(), files);
    for (const InstalledFile& file : result->files) {
      auto it = staged.find(file.path);
      ASSERT_NE(it, staged.end()) << file.path;
      EXPECT_EQ(file.mode, it->second.mode) << file.path;
      EXPECT_EQ(file.size, it->second.content.size()) << file.path;
      EXPECT_EQ(file.sha256, sha256(it->second.content)) << file.path;
    }
    for (const std::string& dir : result->directories) {
      EXPECT_EQ(staged.count(dir + "/"), 1u) << dir;
    }
  }

  // The site-packages-relative dist-info directory the install of `project` 1.0 produced.
  static std::string result_dist_info(const fs::path& staging,
                                      const std::string& project = "demo_pkg") {
    for (const auto& entry : fs::recursive_directory_iterator(staging)) {
      if (entry.path().filename() == project + "-1.0.dist-info") {
        return entry.path().lexically_relative(staging).generic_string();
      }
    }
    return {};
  }

  static const Case& find(const std::string& label) {
    for (const Case& c : *s_cases) {
      if (c.label == label) return c;
    }
    throw std::logic_error(label);
  }

  static TempDir* s_dir;
  static std::vector<Case>* s_cases;
  static std::vector<fs::path>* s_all_wheels;
};

TempDir* WheelPipParity::s_dir = nullptr;
std::vector<Case>* WheelPipParity::s_cases = nullptr;
std::vector<fs::path>* WheelPipParity::s_all_wheels = nullptr;

TEST_F(WheelPipParity, BundledPip) {
  check_parity(find("pip"));
}

TEST_F(WheelPipParity, BundledSetuptools) {
  check_parity(find("setuptools"));
}

TEST_F(WheelPipParity, DemoWheelWithEveryScheme) {
  check_parity(find("demo"));
  // And the demo wheel really exercised what it is for.
  fs::path staging = s_dir->path() / "staging-demo";
  std::string python = (find("demo").venv / "bin/python").string();
  auto script = read_file(staging / "bin/demo-script");
  ASSERT_TRUE(script);
  EXPECT_EQ(*script, "#!" + python + "\nprint('hello')\n");
  EXPECT_TRUE(fs::exists(staging / "bin/democli"));
  EXPECT_TRUE(fs::exists(staging / "bin/demogui"));
  EXPECT_FALSE(fs::exists(staging / "bin/democli-script.py"));
  auto venv = env::open_venv_at(find("demo").venv);
  ASSERT_TRUE(venv);
  EXPECT_TRUE(fs::exists(staging / fmt::format("include/site/python{}.{}/demo-pkg/demo.h",
                                               venv->python.major, venv->python.minor)));
  fs::path site = fs::path(result_dist_info(staging)).parent_path();
  EXPECT_NE(fs::status(staging / site / "demo_pkg/tool.sh").permissions() & fs::perms::owner_exec,
            fs::perms::none);
  EXPECT_EQ(fs::status(staging / site / "demo_pkg/cli.py").permissions() & fs::perms::owner_exec,
            fs::perms::none);
  EXPECT_TRUE(fs::exists(staging / "share/demo/data.txt"));
}

TEST_F(WheelPipParity, NonAsciiNamesUnderLangC) {
  check_parity(find("unicode-lang-c"));
  // The names are UTF-8 on disk, as pip leaves them.
  fs::path site =
      fs::path(result_dist_info(s_dir->path() / "staging-unicode-lang-c", "unicode_pkg"))
          .parent_path();
  fs::path staged = s_dir->path() / "staging-unicode-lang-c" / site / "unicode_pkg";
  EXPECT_TRUE(fs::exists(staged / "caf\xc3\xa9.py"));
  EXPECT_TRUE(fs::exists(staged / "\xf0\x9f\x90\x8d.txt"));
  EXPECT_TRUE(fs::exists(s_dir->path() / "staging-unicode-lang-c/bin/gr\xc3\xbc\xc3\x9f"));
}

TEST_F(WheelPipParity, NonAsciiNamesUnderLcAllUtf8) {
  check_parity(find("unicode-lc-all-utf8"));
}

TEST_F(WheelPipParity, Cp437NamesWithoutTheUtf8FlagUnderLangC) {
  check_parity(find("cp437-lang-c"));
  fs::path site = fs::path(result_dist_info(s_dir->path() / "staging-cp437-lang-c", "unicode_pkg"))
                      .parent_path();
  // 0x80 is "Ç" (U+00C7) in CP437: the first of the 64 high bytes of the first name.
  bool found = false;
  for (const auto& entry :
       fs::directory_iterator(s_dir->path() / "staging-cp437-lang-c" / site / "unicode_pkg")) {
    found = found || entry.path().filename().string().starts_with("\xc3\x87\xc3\xbc");
  }
  EXPECT_TRUE(found);
}

TEST_F(WheelPipParity, Cp437NamesWithoutTheUtf8FlagUnderLcAllUtf8) {
  check_parity(find("cp437-lc-all-utf8"));
}

TEST_F(WheelPipParity, NfdNamesKeepTheirBytes) {
  check_parity(find("nfd-lang-c"));
  const fs::path staging = s_dir->path() / "staging-nfd-lang-c";
  fs::path site = fs::path(result_dist_info(staging, "unicode_pkg")).parent_path();
  EXPECT_TRUE(fs::exists(staging / site / "unicode_pkg/cafe\xcc\x81.py"));
  EXPECT_FALSE(fs::exists(staging / site / "unicode_pkg/caf\xc3\xa9.py"));
  EXPECT_TRUE(fs::exists(staging / "bin/gru\xcc\x88\xc3\x9f"));
}

TEST_F(WheelPipParity, NfcAndNfdTwinsAreTwoFiles) {
  check_parity(find("nfc-nfd-lang-c"));
  const fs::path staging = s_dir->path() / "staging-nfc-nfd-lang-c";
  fs::path site = fs::path(result_dist_info(staging, "unicode_pkg")).parent_path();
  EXPECT_TRUE(fs::exists(staging / site / "unicode_pkg/cafe\xcc\x81.py"));
  EXPECT_TRUE(fs::exists(staging / site / "unicode_pkg/caf\xc3\xa9.py"));
}

TEST_F(WheelPipParity, WorldAndBundledWheelsInOneVenvMovedIntoPlace) {
  const std::vector<fs::path>& wheels = *s_all_wheels;
  ASSERT_GT(wheels.size(), 20u);
  // Both venvs live at the same path in turn, so every script's shebang is the same bytes.
  const fs::path root = s_dir->path() / "venv-all";
  const fs::path pip_copy = s_dir->path() / "venv-all-by-pip";
  fs::rename(root, pip_copy);

  ASSERT_TRUE(test_support::make_venv(root));
  auto venv = env::open_venv_at(root);
  ASSERT_TRUE(venv) << venv.error().message;
  InstallOptions options;
  options.requested = Requested::yes;
  for (std::size_t k = 0; k < wheels.size(); ++k) {
    fs::path staging = root / ".venvfix/staging" / std::to_string(k);
    fs::create_directories(staging);
    auto result = install_wheel(wheels[k], *venv, staging, options);
    ASSERT_TRUE(result) << result.error().message;
    for (const InstalledFile& file : result->files) {
      fs::path target = root / file.path;
      ASSERT_FALSE(fs::exists(target)) << file.path << " of " << wheels[k].filename();
      fs::create_directories(target.parent_path());
      fs::rename(staging / file.path, target);
    }
  }
  fs::remove_all(root / ".venvfix");

  auto ours = testing::tree_of(root);
  auto pips = testing::tree_of(pip_copy);
  auto dist_info_file = [](const std::string& path, std::string_view file) {
    return path.ends_with(std::string(".dist-info/") + std::string(file));
  };
  // RECORD rows but INSTALLER's and direct_url.json's.
  auto rows = [](const std::string& text) {
    std::string out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      std::string path = line.substr(0, line.find(','));
      if (path.ends_with(".dist-info/INSTALLER") || path.ends_with(".dist-info/direct_url.json")) {
        continue;
      }
      out += line + "\n";
    }
    return out;
  };
  std::vector<std::string> only_ours, only_pip, different;
  std::size_t records = 0;
  for (const auto& [path, file] : ours) {
    auto it = pips.find(path);
    if (it == pips.end()) {
      only_ours.push_back(path);
    } else if (dist_info_file(path, "INSTALLER")) {
      EXPECT_EQ(file.content, "venvfix\n") << path;
      EXPECT_EQ(it->second.content, "pip\n") << path;
      EXPECT_EQ(file.mode, it->second.mode) << path;
    } else if (dist_info_file(path, "RECORD")) {
      ++records;
      EXPECT_EQ(rows(file.content), rows(it->second.content)) << path;
      EXPECT_EQ(file.mode, it->second.mode) << path;
    } else if (!(it->second == file)) {
      different.push_back(path +
                          fmt::format(" (mode {:o} vs pip {:o})", file.mode, it->second.mode));
    }
  }
  for (const auto& [path, file] : pips) {
    if (ours.count(path) == 0 && !dist_info_file(path, "direct_url.json")) only_pip.push_back(path);
  }
  EXPECT_TRUE(only_ours.empty()) << "only venvfix: " << testing::join(only_ours, ", ");
  EXPECT_TRUE(only_pip.empty()) << "only pip: " << testing::join(only_pip, ", ");
  EXPECT_TRUE(different.empty()) << "different: " << testing::join(different, ", ");
  EXPECT_EQ(records, wheels.size());
}

}  // namespace
}  // namespace venvfix::wheel
