// A cgroup v1 `pids` group made by a test: what a container at its pids.max or a user at
// `ulimit -u` is, a place where the kernel refuses clone() (new threads and new processes) with
// EAGAIN once the group holds pids.max tasks. Made below the calling thread's own group, as
// root, where the pids controller is mounted; create() says why not otherwise, for the test to
// skip. Removed on destruction (the kernel removes only an empty group).
#pragma once

#include <filesystem>
#include <string>
#include <variant>
#include <vector>

namespace venvfix::testing {

class PidsGroup {
 public:
  // A new group whose pids.max is `max`, or why none can be made here. Groups of this kind left
  // by a test that crashed inside one are removed first (those still in use stay).
  static std::variant<PidsGroup, std::string> create(unsigned max);
  PidsGroup(PidsGroup&& other) noexcept;
  PidsGroup& operator=(PidsGroup&&) = delete;
  ~PidsGroup();

  const std::filesystem::path& dir() const { return m_dir; }
  // The group that the calling thread of create() was in.
  const std::filesystem::path& parent() const { return m_parent; }
  // pids.max, changed from any thread (a test frees a slot while its subject waits for one).
  bool set_max(unsigned max) const;
  // Moves the calling thread alone into the group (its process's other threads stay out), and
  // back into parent().
  bool take_this_thread() const;
  bool return_this_thread() const;
  // A command prefix that joins the group and then becomes the rest of the command:
  // {"/bin/sh", "-c", "echo $$ > <dir>/cgroup.procs && exec \"$@\"", "sh"}.
  std::vector<std::string> launcher() const;

 private:
  PidsGroup(std::filesystem::path dir, std::filesystem::path parent)
      : m_dir(std::move(dir)), m_parent(std::move(parent)) {}
  std::filesystem::path m_dir;
  std::filesystem::path m_parent;
};

}  // namespace venvfix::testing
