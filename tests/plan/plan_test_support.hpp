// Helpers for the planner tests: scenario venvs of the test world analysed in-process with the
// hermetic loader view, the world's index served on loopback, and a compact summary of a plan.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/manifests.hpp"
#include "support/paths.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/elf/ld_cache.hpp"
#include "venvfix/elf/system_view.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/index/client.hpp"
#include "venvfix/manifest/manifests.hpp"
#include "venvfix/plan/planner.hpp"
#include "venvfix/verify/analysis.hpp"

namespace venvfix::plan::testing {

// The world's index, served once for the whole test program.
inline const std::string& world_index_url() {
  static std::unique_ptr<venvfix::testing::IndexServer> server;
  if (!server) {
    server = std::make_unique<venvfix::testing::IndexServer>(
        venvfix::testing::IndexServer::start(venvfix::testing::test_world().index_dir));
  }
  static std::string url = server->url();
  return url;
}

using venvfix::testing::manifests;

// The loader's view with the world's hermetic cache: no host CUDA directory.
inline elf::SystemView hermetic_view() {
  auto view = elf::SystemView::host(elf::UseLdLibraryPath::no);
  if (!view) throw std::runtime_error(view.error().message);
  auto cache = elf::LdCache::load(venvfix::testing::test_world().hermetic_cache);
  if (!cache) throw std::runtime_error(cache.error().message);
  view->cache = std::move(cache).value();
  return std::move(view).value();
}

inline verify::Analysis analyse(const fs::path& venv_root, std::vector<std::string> targets = {}) {
  auto venv = env::open_venv_at(venv_root);
  if (!venv) throw std::runtime_error(venv.error().message);
  verify::Options options;
  options.targets = std::move(targets);
  auto analysis = verify::analyze(std::move(venv).value(), manifests(), hermetic_view(), options);
  if (!analysis) throw std::runtime_error(analysis.error().message);
  return std::move(analysis).value();
}

inline index::IndexConfig index_config(const std::vector<std::string>& index_urls,
                                       const fs::path& cache_dir) {
  index::IndexConfig config;
  config.index_urls = index_urls;
  config.cache_dir = cache_dir;
  config.progress = fetch::ProgressMode::off;
  config.max_retries = 1;
  config.retry_base_delay_seconds = 0.05;
  return config;
}

// The plan for the venv at `venv_root` (analysed for `targets`) from `index_urls`, with the
// download cache at `cache_dir`. Throws on an error, which fails the calling test.
inline Plan plan_venv(const fs::path& venv_root, const std::vector<std::string>& index_urls,
                      const fs::path& cache_dir, const PlanOptions& options = {},
                      std::vector<std::string> targets = {}) {
  verify::Analysis analysis = analyse(venv_root, std::move(targets));
  index::IndexClient client(index_config(index_urls, cache_dir));
  auto made = make_plan(analysis, manifests(), client, options);
  if (!made) throw std::runtime_error(made.error().message);
  return std::move(made).value();
}

// One line per action: "install nvidia-cudnn-cu12 9.10.2.21 pin", "remove x 1.0 uninstall".
inline std::vector<std::string> summary(const Plan& plan) {
  std::vector<std::string> out;
  for (const Action& action : plan.actions) {
    const std::string& rule =
        std::visit([](const auto& a) -> const std::string& { return a.rule; }, action);
    out.push_back(std::string(to_string(kind_of(action))) + " " + dist_of(action) + " " +
                  version_of(action) + " " + rule);
  }
  return out;
}

// The plan's action `i`, which the test expects to be an install (a remove).
inline const Install& install_at(const Plan& plan, std::size_t i) {
  return std::get<Install>(plan.actions.at(i));
}
inline const Remove& remove_at(const Plan& plan, std::size_t i) {
  return std::get<Remove>(plan.actions.at(i));
}

// The unresolved entries as the plan document writes them, for failure messages.
inline std::string dump(const std::vector<Unresolved>& entries) {
  nlohmann::json out = nlohmann::json::array();
  for (const Unresolved& entry : entries) out.push_back(to_json(entry));
  return out.dump(2);
}

// The "kind" of each unresolved entry, with its dist or soname (as the document has them).
inline std::vector<std::string> unresolved_summary(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& typed : plan.unresolved) {
    const nlohmann::json entry = to_json(typed);
    out.push_back(entry.value("kind", std::string()) + " " +
                  entry.value("dist", entry.value("soname", std::string())));
  }
  return out;
}

// Writes a distribution by hand (as a tool other than pip might leave it): METADATA with the
// given Requires-Dist lines and a RECORD listing `files` (relative to site-packages, created
// with the given contents) with correct sha256 and sizes.
inline void write_distribution(const fs::path& site_packages, const std::string& name,
                               const std::string& version,
                               const std::vector<std::string>& requires_dist,
                               const std::vector<std::pair<std::string, std::string>>& files = {}) {
  std::string stem = name;
  std::replace(stem.begin(), stem.end(), '-', '_');
  std::string dir_name = stem + "-" + version + ".dist-info";
  fs::path info = site_packages / dir_name;
  fs::create_directories(info);
  std::string metadata = "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n";
  for (const std::string& line : requires_dist) metadata += "Requires-Dist: " + line + "\n";
  std::ofstream(info / "METADATA") << metadata;
  std::ofstream(info / "INSTALLER") << "pip\n";
  std::string record;
  auto row = [&](const std::string& relative, const std::string& content) {
    record += relative + ",sha256=" + to_base64url_nopad(sha256(content)) + "," +
              std::to_string(content.size()) + "\n";
  };
  for (const auto& [relative, content] : files) {
    fs::create_directories((site_packages / relative).parent_path());
    std::ofstream(site_packages / relative, std::ios::binary) << content;
    row(relative, content);
  }
  row(dir_name + "/METADATA", metadata);
  row(dir_name + "/INSTALLER", "pip\n");
  record += dir_name + "/RECORD,,\n";
  std::ofstream(info / "RECORD") << record;
}

// One copy of scenario `name` for the whole test program, for tests that only read it (planning
// writes nothing but the hash cache under <venv>/.venvfix/).
inline fs::path shared_scenario(const std::string& name) {
  static std::optional<TempDir> dir;
  static std::map<std::string, fs::path> made;
  if (auto it = made.find(name); it != made.end()) return it->second;
  if (!dir) {
    auto created = TempDir::create("venvfix-plan-shared-");
    if (!created) throw std::runtime_error(created.error().message);
    dir.emplace(std::move(created).value());
  }
  return made[name] = venvfix::testing::make_scenario(name, dir->path());
}

inline fs::path site_packages_of(const fs::path& venv_root) {
  auto venv = env::open_venv_at(venv_root);
  if (!venv) throw std::runtime_error(venv.error().message);
  return venv->purelib;
}

}  // namespace venvfix::plan::testing
