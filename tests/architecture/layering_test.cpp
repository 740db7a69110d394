// Keeps the module graph one-way (docs/CONTRIBUTING.md): every `#include "venvfix/<m>/…"` in a
// module's sources and headers must name the module itself or one it may depend on, and C
// library headers stay out of the public headers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "support/paths.hpp"

namespace {

namespace fs = std::filesystem;

// module -> the modules it may include (besides itself).
const std::map<std::string, std::set<std::string>>& allowed_dependencies() {
  static const std::map<std::string, std::set<std::string>> k_allowed = {
      {"base", {}},
      {"pep", {"base"}},
      {"elf", {"base"}},
      {"env", {"base", "pep"}},
      {"dist", {"base", "pep", "env"}},
      {"manifest", {"base", "pep"}},
      {"index", {"base", "pep", "fetch"}},
      {"fetch", {"base"}},
      {"wheel", {"base", "pep", "dist", "env"}},
      {"verify", {"base", "pep", "elf", "env", "dist", "manifest"}},
      {"plan",
       {"base", "pep", "elf", "env", "dist", "manifest", "index", "fetch", "wheel", "verify"}},
      // The transaction engine knows venvs and files, nothing about plans or wheels.
      {"txn", {"base", "env"}},
      // The application of plans: staging, the load check, removal, apply itself.
      {"apply",
       {"base", "pep", "elf", "env", "dist", "manifest", "index", "fetch", "wheel", "verify",
        "plan", "txn"}},
      // The guard around pip and uv: wrappers in bin/, and run_guarded for what changes.
      {"guard", {"base", "env"}},
  };
  return k_allowed;
}

// "venvfix/<module>/…" named by an #include line, or "" (no std::regex: GCC 12 warns inside it).
std::string included_module(const std::string& line) {
  std::size_t at = line.find("#include");
  if (at == std::string::npos) return {};
  std::size_t start = line.find("venvfix/", at);
  if (start == std::string::npos) return {};
  start += 8;
  std::size_t end = line.find('/', start);
  return end == std::string::npos ? std::string() : line.substr(start, end - start);
}

std::string module_of(const fs::path& relative) {
  // include/venvfix/<module>/... or src/<module>/...
  auto it = relative.begin();
  if (*it == "include")
    ++it, ++it;
  else
    ++it;
  return it == relative.end() ? std::string() : it->string();
}

TEST(ArchitectureLayering, IncludesFollowTheModuleGraph) {
  const fs::path root = venvfix::testing::source_dir();
  std::vector<std::string> violations;
  std::size_t files = 0;
  for (const char* top : {"include/venvfix", "src"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      if (!entry.is_regular_file()) continue;
      fs::path relative = entry.path().lexically_relative(root);
      std::string module = module_of(relative);
      auto allowed = allowed_dependencies().find(module);
      if (allowed == allowed_dependencies().end()) continue;  // cli and the like may use all
      ++files;
      std::ifstream in(entry.path());
      std::string line;
      while (std::getline(in, line)) {
        std::string used = included_module(line);
        if (used.empty()) continue;
        if (used != module && !allowed->second.count(used)) {
          violations.push_back(relative.string() + " includes venvfix/" + used);
        }
      }
    }
  }
  EXPECT_GT(files, 0u);
  for (const std::string& v : violations) ADD_FAILURE() << v;
}

TEST(ArchitectureLayering, PublicHeadersHideCLibraries) {
  const fs::path root = venvfix::testing::source_dir();
  const std::vector<std::string> c_headers = {"<curl/", "<archive", "<libelf", "<gelf",
                                              "<openssl/"};
  for (const auto& entry : fs::recursive_directory_iterator(root / "include/venvfix")) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("#include") == std::string::npos) continue;
      for (const std::string& header : c_headers) {
        EXPECT_EQ(line.find(header), std::string::npos)
            << entry.path().lexically_relative(root).string() << ": " << line;
      }
    }
  }
}

// Each C library is wrapped by exactly one module; everything else uses that module's API.
TEST(ArchitectureLayering, EachCLibraryStaysInItsModule) {
  const fs::path root = venvfix::testing::source_dir();
  const std::vector<std::pair<std::string, std::string>> owner_of = {{"<curl/", "fetch"},
                                                                     {"<archive", "wheel"},
                                                                     {"<libelf", "elf"},
                                                                     {"<gelf", "elf"},
                                                                     {"<openssl/", "base"}};
  std::size_t files = 0;
  for (const char* top : {"include/venvfix", "src"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      if (!entry.is_regular_file()) continue;
      fs::path relative = entry.path().lexically_relative(root);
      std::string module = module_of(relative);
      ++files;
      std::ifstream in(entry.path());
      std::string line;
      while (std::getline(in, line)) {
        if (line.find("#include") == std::string::npos) continue;
        for (const auto& [header, owner] : owner_of) {
          if (line.find(header) != std::string::npos && module != owner) {
            ADD_FAILURE() << relative.string() << " includes " << header << "; only the " << owner
                          << " module may";
          }
        }
      }
    }
  }
  EXPECT_GT(files, 100u);
}

}  // namespace
