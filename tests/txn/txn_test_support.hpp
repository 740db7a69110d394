// Helpers for the txn tests: a small venv laid out like `python3 -m venv` makes it (pyvenv.cfg,
// bin/, lib/python3.12/site-packages) with files in it, built in a temporary directory.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/scratch_test.hpp"
#include "support/venv_tree.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/txn/fingerprint.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/transaction.hpp"

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
  write_text(root / "pyvenv.cfg",
             "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n");
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

enum class Entries { regular_files, all_but_directories };

// path -> inode of the `entries` under `root` except .venvfix/ (lstat: a symlink by its own
// inode): which files a restore or rollback put back as they were, and which it rewrote.
inline std::map<std::string, ino_t> inodes_of(const fs::path& root, Entries entries) {
  std::map<std::string, ino_t> out;
  const std::error_code error =
      venvfix::testing::walk_venv_tree(root, [&](const std::string& rel, const struct stat& st) {
        const bool wanted =
            entries == Entries::regular_files ? S_ISREG(st.st_mode) : !S_ISDIR(st.st_mode);
        if (wanted) out[rel] = st.st_ino;
      });
  EXPECT_FALSE(error) << error.message();
  return out;
}

// A test on a small venv of its own (make_small_venv in its temporary directory) whose lock it
// holds.
class LockedVenvTest : public venvfix::testing::ScratchTest {
 protected:
  using ScratchTest::ScratchTest;
  void SetUp() override {
    ScratchTest::SetUp();
    if (HasFatalFailure()) return;
    m_venv = make_small_venv(m_dir->path());
    auto lock = VenvLock::acquire(m_venv, LockWait::fail);
    ASSERT_TRUE(lock) << lock.error().message;
    m_lock.emplace(std::move(lock).value());
  }
  fs::path site() const { return m_venv.root / k_site; }

  env::Venv m_venv;
  std::optional<VenvLock> m_lock;
};

// The venv fingerprints as `expected`; a failure lists the paths that differ.
inline void expect_venv_is(const env::Venv& venv, const Fingerprint& expected) {
  const Fingerprint now = fingerprint(venv);
  EXPECT_EQ(now, expected) << describe_difference(expected, now);
}

// The change set of the fault tests (faults_test.cpp on real disks, injected_faults_test.cpp
// through the seam): replaces a file, removes one (its directory is pruned), adds one in a new
// directory, staged in the venv's staging directory.
inline ChangeSet replace_and_remove(const env::Venv& venv) {
  auto staging = make_staging_dir(venv);
  EXPECT_TRUE(staging);
  write_text(*staging / k_site / "pkg/__init__.py", "x = 2\n");
  write_text(*staging / k_site / "newpkg/a.py", "a\n");
  return ChangeSet{"fault test",
                   *staging,
                   {k_site + "/pkg/__init__.py", k_site + "/newpkg/a.py"},
                   {k_site + "/pkg/__init__.py", k_site + "/other/mod.py"}};
}

// A fault before the journal is durable: `begun` (Transaction::begin on `venv`) failed with an
// error naming `reason`, and left neither a transaction to recover nor any change.
inline void expect_begin_refused(const Result<Transaction>& begun, const env::Venv& venv,
                                 const Fingerprint& before, const std::string& reason) {
  ASSERT_FALSE(begun);
  EXPECT_NE(begun.error().message.find(reason), std::string::npos) << begun.error().message;
  EXPECT_TRUE(require_no_unfinished_transaction(venv));
  EXPECT_EQ(fingerprint(venv), before);
}

// A fault during execute(): it failed with an error naming every one of `needles`, and
// roll_back() then succeeded.
inline void expect_execute_fails_then_rolls_back(Transaction& txn,
                                                 const std::vector<std::string>& needles) {
  auto executed = txn.execute();
  ASSERT_FALSE(executed);
  for (const std::string& needle : needles) {
    EXPECT_NE(executed.error().message.find(needle), std::string::npos) << executed.error().message;
  }
  auto rolled = txn.roll_back();
  ASSERT_TRUE(rolled) << rolled.error().message;
}

}  // namespace venvfix::txn::testing
