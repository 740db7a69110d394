#include "pids_group.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string_view>
#include <utility>

#include "venvfix/base/fs.hpp"

namespace venvfix::testing {
namespace {

constexpr const char* k_pids_root = "/sys/fs/cgroup/pids";
constexpr std::string_view k_prefix = "venvfix-test-pids-";

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

std::string this_thread_id() {
  return std::to_string(static_cast<long>(::syscall(SYS_gettid)));
}

}  // namespace

std::variant<PidsGroup, std::string> PidsGroup::create(unsigned max) {
  if (::geteuid() != 0) return std::string("not root: cannot create a pids cgroup");
  const std::string own = own_pids_group();
  if (own.empty()) return std::string("no cgroup v1 pids controller at ") + k_pids_root;
  fs::path parent = fs::path(k_pids_root) / own.substr(1);
  std::error_code ignored;
  for (const auto& old : fs::directory_iterator(parent, ignored)) {
    if (old.path().filename().string().starts_with(k_prefix)) ::rmdir(old.path().c_str());
  }
  // Unique within the process too: tests of one binary may each hold one.
  static std::atomic<unsigned> made{0};
  const fs::path dir = parent / (std::string(k_prefix) + std::to_string(::getpid()) + "-" +
                                 std::to_string(made.fetch_add(1)));
  std::error_code error;
  if (!fs::create_directory(dir, error)) {
    return "cannot create " + dir.string() + ": " + error.message();
  }
  PidsGroup group(dir, std::move(parent));
  if (!group.set_max(max)) return "cannot set pids.max in " + dir.string();
  return group;
}

PidsGroup::PidsGroup(PidsGroup&& other) noexcept
    : m_dir(std::exchange(other.m_dir, fs::path())), m_parent(std::move(other.m_parent)) {}

PidsGroup::~PidsGroup() {
  if (!m_dir.empty()) ::rmdir(m_dir.c_str());
}

bool PidsGroup::set_max(unsigned max) const {
  return write_value(m_dir / "pids.max", std::to_string(max));
}

bool PidsGroup::take_this_thread() const {
  return write_value(m_dir / "tasks", this_thread_id());
}

bool PidsGroup::return_this_thread() const {
  return write_value(m_parent / "tasks", this_thread_id());
}

std::vector<std::string> PidsGroup::launcher() const {
  return {"/bin/sh", "-c", "echo $$ > '" + (m_dir / "cgroup.procs").string() + "' && exec \"$@\"",
          "sh"};
}

}  // namespace venvfix::testing
