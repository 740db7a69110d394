// A test fixture with a temporary directory of its own, made in SetUp and removed with
// everything in it after the test: where the end-to-end tests copy scenario venvs, write plans
// and keep their download cache.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "support/world.hpp"
#include "venvfix/base/fs.hpp"

namespace venvfix::testing {

class ScratchTest : public ::testing::Test {
 protected:
  // `prefix`: the directory's name before the random part (TempDir::create).
  explicit ScratchTest(std::string prefix) : m_prefix(std::move(prefix)) {}

  // A fixture that adds to SetUp calls this first and returns on HasFatalFailure().
  void SetUp() override {
    auto dir = TempDir::create(m_prefix);
    ASSERT_TRUE(dir) << dir.error().message;
    m_dir.emplace(std::move(dir).value());
  }

  fs::path path(const std::string& name) const { return m_dir->path() / name; }
  // A fresh, writable copy of the world's scenario `name` in this directory.
  fs::path scenario(std::string_view name) const { return make_scenario(name, m_dir->path()); }
  // The same, returned once its files are older than the hash cache's racy margin (100 ms,
  // changed_well_before in venvfix/base/fs.hpp): the copy gives every file a new ctime, and a
  // digest of a file changed that recently is not kept, so on a fast host a doctor run at once
  // would leave the next one hashing again.
  fs::path settled_scenario(std::string_view name) const {
    fs::path venv = scenario(name);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    return venv;
  }

  std::optional<TempDir> m_dir;

 private:
  std::string m_prefix;
};

}  // namespace venvfix::testing
