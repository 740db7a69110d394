#include "cli/wheel_file_plan.hpp"

#include <fstream>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/paths.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/sha256.hpp"

namespace venvfix::testing {

void make_empty_venv(const fs::path& venv) {
  const CommandResult made = run_command({"python3", "-m", "venv", "--without-pip", venv.string()});
  EXPECT_EQ(made.exit_code, 0) << made.err;
}

void write_plan_installing(const fs::path& venv, const fs::path& cache, const fs::path& wheel,
                           const std::string& dist, const fs::path& plan_file) {
  const CommandResult planned =
      run_command({venvfix_binary(), "--venv", venv.string(), "--cache-dir", cache.string(), "-q",
                   "plan", "-o", plan_file.string()});
  EXPECT_TRUE(planned.exit_code == 0 || planned.exit_code == 3) << planned.err;
  auto text = read_file(plan_file);
  EXPECT_TRUE(text);
  nlohmann::json plan = nlohmann::json::parse(text ? *text : "{}");
  auto digest = sha256_file(wheel);
  EXPECT_TRUE(digest);
  std::error_code error;
  plan["actions"].push_back({{"action", "install"},
                             {"dist", dist},
                             {"version", "1.0"},
                             {"file", wheel.filename().string()},
                             {"url", "file://" + wheel.string()},
                             {"sha256", digest ? to_hex(*digest) : ""},
                             {"size", fs::file_size(wheel, error)},
                             {"provides", nlohmann::json::array()},
                             {"reason", "a test's wheel"}});
  std::ofstream(plan_file) << plan.dump(2);
}

}  // namespace venvfix::testing
