// Helpers for the txn tests: a small venv laid out like `python3 -m venv` makes it (pyvenv.cfg,
// bin/, lib/python3.12/site-packages) with files in it, built in a temporary directory.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "venvfix/base/fs.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/txn/fingerprint.hpp"

namespace venvfix::txn::testing {

inline void write_text(const fs::path& path, const std::string& text, mode_t mode = 0644) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  ::chmod(path.c_str(), mode);
}

inline std::string read_text(const fs::path& path) {
  auto text = read_file(path);
  return text ? *text : std::string("<unreadable>");
}

// A temporary directory on /dev/shm when it is a writable tmpfs, else under $TMPDIR. For the
// crash tests, which stop processes (not machines): fsync costs nothing on tmpfs, so the
// matrix of hundreds of transactions stays fast on a busy disk.
inline Result<TempDir> memory_temp_dir(std::string_view prefix) {
  if (::access("/dev/shm", W_OK) != 0) return TempDir::create(prefix);
  const char* old = std::getenv("TMPDIR");
  std::string saved = old != nullptr ? old : "";
  ::setenv("TMPDIR", "/dev/shm", 1);
  auto dir = TempDir::create(prefix);
  if (old != nullptr)
    ::setenv("TMPDIR", saved.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  return dir;
}

inline const std::string k_site = "lib/python3.12/site-packages";

// A venv at dir/venv holding a few packages.
inline env::Venv make_small_venv(const fs::path& dir) {
  fs::path root = dir / "venv";
  write_text(root / "pyvenv.cfg", "home = /usr/bin\nversion = 3.12.3\n");
  write_text(root / "bin/python3", "#!/bin/sh\n", 0755);
  write_text(root / k_site / "pkg/__init__.py", "x = 1\n");
  write_text(root / k_site / "pkg/lib/libpkg.so.1", std::string(5000, 'a'), 0755);
  write_text(root / k_site / "pkg/sub/deep/data.txt", "deep\n", 0600);
  fs::create_symlink("libpkg.so.1", root / k_site / "pkg/lib/libpkg.so");
  write_text(root / k_site / "pkg-1.0.dist-info/RECORD", "pkg/__init__.py,,\n");
  write_text(root / k_site / "other/mod.py", "y = 2\n");
  auto venv = env::open_venv_at(root);
  EXPECT_TRUE(venv) << venv.error().message;
  return *venv;
}

inline Fingerprint fingerprint(const env::Venv& venv) {
  auto print = fingerprint_tree(venv.root);
  EXPECT_TRUE(print) << print.error().message;
  return print ? *print : Fingerprint{};
}

}  // namespace venvfix::txn::testing
