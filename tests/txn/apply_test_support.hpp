// Shared by the apply, stage, removal and load-check tests: fingerprints of a venv, wheels
// made for a test, shared objects compiled for a test, plans written by hand.
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/paths.hpp"
#include "support/venv_tree.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/plan/document.hpp"

namespace venvfix::txn::testing {

using venvfix::testing::run_command;

// path -> "type mode size sha256" (symlinks: "link -> target") for every entry under `root`
// except <root>/.venvfix (venvfix's own state: lock, hash cache, snapshots).
inline std::map<std::string, std::string> fingerprint(const fs::path& root) {
  std::map<std::string, std::string> out;
  (void)venvfix::testing::walk_venv_tree(root, [&](const std::string& rel, const struct stat& st) {
    const fs::path path = root / rel;
    std::ostringstream line;
    if (S_ISLNK(st.st_mode)) {
      line << "link -> " << fs::read_symlink(path).string();
    } else if (S_ISDIR(st.st_mode)) {
      line << "dir " << std::oct << (st.st_mode & 07777);
    } else {
      auto digest = sha256_file(path);
      line << "file " << std::oct << (st.st_mode & 07777) << std::dec << " " << st.st_size << " "
           << (digest ? to_hex(*digest) : std::string("unreadable"));
    }
    out[rel] = line.str();
  });
  return out;
}

// The entries that differ between two fingerprints ("+path", "-path", "~path"), for messages.
inline std::vector<std::string> fingerprint_diff(const std::map<std::string, std::string>& a,
                                                 const std::map<std::string, std::string>& b) {
  std::vector<std::string> out;
  for (const auto& [path, value] : a) {
    auto it = b.find(path);
    if (it == b.end()) {
      out.push_back("-" + path);
    } else if (it->second != value) {
      out.push_back(fmt::format("~{} ({} -> {})", path, value, it->second));
    }
  }
  for (const auto& [path, value] : b) {
    if (!a.count(path)) out.push_back("+" + path);
  }
  return out;
}

// The tree under `root` fingerprints as `expected`; a failure lists the entries that differ.
inline void expect_tree_is(const fs::path& root,
                           const std::map<std::string, std::string>& expected) {
  const auto now = fingerprint(root);
  EXPECT_EQ(now, expected) << ::testing::PrintToString(fingerprint_diff(expected, now));
}

struct MadeWheel {
  fs::path path;
  std::string sha256;
  std::uint64_t size = 0;
  std::string file_name() const { return path.filename().string(); }
};

// A py3-none-any wheel of `name` `version` from the tree `source` (relative paths as member
// names); `extra` are more arguments for apply_make_wheel.py (--purelib, --raw NAME=TEXT).
inline MadeWheel make_wheel(const fs::path& out_dir, const std::string& name,
                            const std::string& version, const fs::path& source,
                            const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {
      "python3",        (venvfix::testing::source_dir() / "tests/txn/apply_make_wheel.py").string(),
      out_dir.string(), name,
      version,          source.string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto result = run_command(argv, {}, 60);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  MadeWheel wheel;
  std::istringstream in(result.out);
  std::string path;
  in >> path >> wheel.sha256 >> wheel.size;
  wheel.path = path;
  return wheel;
}

inline void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// Compiles C `code` into the shared object `out` with soname `soname`, linked against the
// shared objects `libraries`, with extra cc flags. Fails the test on a toolchain error.
inline void compile_shared(const fs::path& out, const std::string& soname, const std::string& code,
                           const std::vector<fs::path>& libraries = {},
                           const std::string& flags = "") {
  fs::create_directories(out.parent_path());
  fs::path source = out.string() + ".c";
  write_text(source, code);
  std::vector<std::string> argv = {"cc",
                                   "-shared",
                                   "-fPIC",
                                   "-o",
                                   out.string(),
                                   source.string(),
                                   "-Wl,--no-as-needed",
                                   "-Wl,-soname," + soname};
  for (const fs::path& library : libraries) argv.push_back(library.string());
  if (!flags.empty()) argv.push_back(flags);
  auto result = run_command(argv, {}, 60);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  fs::remove(source);
}

// A shared object whose DT_NEEDED names `missing_soname`, which nothing provides: it is linked
// against a stub of that soname made in a scratch directory that is removed again.
inline void compile_with_missing_needed(const fs::path& out, const std::string& soname,
                                        const std::string& missing_soname) {
  auto scratch = TempDir::create("venvfix-stub-");
  ASSERT_TRUE(scratch);
  fs::path stub = scratch->path() / missing_soname;
  compile_shared(stub, missing_soname, "int venvfix_stub(void) { return 0; }\n");
  compile_shared(out, soname, "int venvfix_uses_stub(void) { return 1; }\n", {stub});
}

// An install action for a wheel served at `url`.
inline plan::Install install_action(const std::string& dist, const std::string& version,
                                    const MadeWheel& wheel, const std::string& url) {
  plan::Install action;
  action.dist = dist;
  action.version = version;
  action.file = wheel.file_name();
  action.url = url;
  action.sha256 = wheel.sha256;
  action.size = wheel.size;
  action.reason = "test";
  return action;
}

// A venv as open_venv_at reads it, made without Python (instant): pyvenv.cfg and an empty
// lib/pythonX.Y/site-packages for the host's python3.
inline fs::path minimal_venv(const fs::path& root) {
  static const std::string version = [] {
    auto result =
        run_command({"python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"}, {}, 60);
    std::string text = result.out;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }();
  fs::create_directories(root / "lib" / ("python" + version) / "site-packages");
  fs::create_directories(root / "bin");
  write_text(
      root / "pyvenv.cfg",
      "home = /usr/bin\ninclude-system-site-packages = false\nversion = " + version + ".0\n");
  return root;
}

inline std::string file_url(const fs::path& path) {
  return "file://" + path.string();
}

}  // namespace venvfix::txn::testing
