// A WriteSteps for tests of what writes durably: the system's steps, each recorded as
// "op args" in order, and the one named `fail` (its op: "write", "sync_data", …) failing with
// EIO instead of happening.
#pragma once

#include <cerrno>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "venvfix/base/fs.hpp"

namespace venvfix::testing {

class RecordingWriteSteps final : public WriteSteps {
 public:
  explicit RecordingWriteSteps(std::string fail = "") : m_fail(std::move(fail)) {}

  int write(const std::string& path, std::string_view data, mode_t mode) override {
    return step("write", path, [&] { return system_write_steps().write(path, data, mode); });
  }
  int rename(const std::string& from, const std::string& to) override {
    return step("rename", from + " " + to, [&] { return system_write_steps().rename(from, to); });
  }
  int remove(const std::string& path) override {
    return step("remove", path, [&] { return system_write_steps().remove(path); });
  }
  int sync_directory(const std::string& dir) override {
    return step("sync_directory", dir, [&] { return system_write_steps().sync_directory(dir); });
  }
  int sync_data(const std::string& path) override {
    return step("sync_data", path, [&] { return system_write_steps().sync_data(path); });
  }
  int sync_filesystem(const std::string& dir) override {
    return step("sync_filesystem", dir, [&] { return system_write_steps().sync_filesystem(dir); });
  }

  const std::vector<std::string>& calls() const { return m_calls; }

 private:
  template <typename Real>
  int step(const std::string& op, const std::string& args, Real&& real) {
    m_calls.push_back(op + " " + args);
    return op == m_fail ? EIO : real();
  }

  std::string m_fail;
  std::vector<std::string> m_calls;
};

}  // namespace venvfix::testing
