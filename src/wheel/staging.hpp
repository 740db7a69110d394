// Writing files under the staging directory: parents created on demand (never through a
// symlink), files created exclusively (never over an existing one), and everything undone
// when the install fails.
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"

namespace venvfix::wheel::detail {

class Staging {
 public:
  static Result<Staging> open(const fs::path& dir, mode_t umask);
  Staging(Staging&&) = default;
  Staging& operator=(Staging&&) = delete;
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  // Unless commit() was called: removes every file and directory this object created.
  ~Staging();

  // Creates `rel` ("a/b/c", validated by the caller) with O_EXCL and exactly `mode`. Safe to
  // call from several threads at once (the parallel unpacker does).
  Result<Fd> create(const std::string& rel, mode_t mode);
  // Makes `rel` a hard link to `target` (an absolute path); parents as create() makes them.
  // Thread-safe like create().
  Status link(const std::string& rel, const fs::path& target);
  // Moves `file` (a path on the staging filesystem that nothing else uses) to `rel` with
  // exactly `mode`; never over an existing file. Thread-safe like create().
  Status adopt(const std::string& rel, const fs::path& file, mode_t mode);
  // Replaces the content of a file this object created, keeping its mode.
  Status rewrite(const std::string& rel, std::string_view data);
  Result<std::string> read(const std::string& rel) const;

  void commit() { m_committed = true; }
  const std::vector<std::string>& created_directories() const { return m_dirs; }
  std::string describe(std::string_view rel) const { return (m_root / rel).string(); }

 private:
  Staging(Fd fd, fs::path root, mode_t umask)
      : m_fd(std::move(fd)),
        m_root(std::move(root)),
        m_umask(umask),
        m_mutex(std::make_unique<std::mutex>()) {}
  Status ensure_parents(const std::string& rel);

  Fd m_fd;
  fs::path m_root;
  mode_t m_umask = 022;
  std::unique_ptr<std::mutex> m_mutex;  // guards the three containers below
  std::unordered_set<std::string> m_known_dirs;
  std::vector<std::string> m_dirs;   // created, parents first
  std::vector<std::string> m_files;  // created
  bool m_committed = false;
};

}  // namespace venvfix::wheel::detail
