#include "threads_refused.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string_view>

#include "venvfix/base/fs.hpp"

namespace venvfix::testing {
namespace {

constexpr const char* k_pids_root = "/sys/fs/cgroup/pids";
constexpr std::string_view k_prefix = "venvfix-test-threads-";

// The calling thread's group in the pids hierarchy, as /proc names it ("/", "/user.slice", …).
std::string own_pids_group() {
  std::ifstream in("/proc/thread-self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const std::size_t first = line.find(':');
    const std::size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    if (line.substr(first + 1, second - first - 1) == "pids") return line.substr(second + 1);
  }
  return "";
}

bool write_value(const fs::path& file, const std::string& value) {
  std::ofstream out(file);
  out << value;
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace

std::string ThreadsRefused::start() {
  if (::geteuid() != 0) return "not root: cannot create a pids cgroup";
  const std::string own = own_pids_group();
  if (own.empty()) return std::string("no cgroup v1 pids controller at ") + k_pids_root;
  const auto tid = static_cast<long>(::syscall(SYS_gettid));
  m_returned = fs::path(k_pids_root) / own.substr(1);
  // Groups left by a test that crashed inside one: empty now, unlike those of tests under way,
  // which the kernel refuses to remove.
  std::error_code ignored;
  for (const auto& old : fs::directory_iterator(m_returned, ignored)) {
    if (old.path().filename().string().starts_with(k_prefix)) ::rmdir(old.path().c_str());
  }
  const fs::path group = m_returned / (std::string(k_prefix) + std::to_string(tid));
  std::error_code error;
  if (!fs::create_directory(group, error)) {
    return "cannot create " + group.string() + ": " + error.message();
  }
  m_group = group;
  if (!write_value(m_group / "pids.max", "1") ||
      !write_value(m_group / "tasks", std::to_string(tid))) {
    return "cannot limit this thread in " + m_group.string();
  }
  return "";
}

ThreadsRefused::~ThreadsRefused() {
  if (m_group.empty()) return;
  write_value(m_returned / "tasks", std::to_string(static_cast<long>(::syscall(SYS_gettid))));
  ::rmdir(m_group.c_str());
}

}  // namespace venvfix::testing
