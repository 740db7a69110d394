#include "support/flock_waiters.hpp"

#include <sys/stat.h>

#include <fstream>
#include <string>
#include <thread>

namespace venvfix::testing {

bool someone_waits_in_flock(const std::filesystem::path& file, std::chrono::seconds limit) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return false;
  const std::string inode = ":" + std::to_string(st.st_ino) + " ";
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    std::ifstream locks("/proc/locks");
    for (std::string line; std::getline(locks, line);) {
      if (line.find(" -> FLOCK ") != std::string::npos && line.find(inode) != std::string::npos) {
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace venvfix::testing
