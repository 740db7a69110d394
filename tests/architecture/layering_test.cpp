// Keeps the module graph one-way (docs/CONTRIBUTING.md): every `#include "venvfix/<m>/…"` in a
// module's sources and headers must name the module itself or one it may depend on, and C
// library headers stay out of the public headers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

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
      {"plan", {"base", "pep", "elf", "env", "dist", "manifest", "index", "fetch", "verify"}},
      {"txn",
       {"base", "pep", "elf", "env", "dist", "manifest", "index", "fetch", "wheel", "verify",
        "plan"}},
  };
  return k_allowed;
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
  const fs::path root = VENVFIX_SOURCE_DIR;
  const std::regex include_re(R"(#include\s+["<]venvfix/([a-z_]+)/)");
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
        std::smatch match;
        if (!std::regex_search(line, match, include_re)) continue;
        std::string used = match[1];
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
  const fs::path root = VENVFIX_SOURCE_DIR;
  const std::regex c_header_re(R"(#include\s+<(curl/|archive|libelf|gelf|openssl/))");
  for (const auto& entry : fs::recursive_directory_iterator(root / "include/venvfix")) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      EXPECT_FALSE(std::regex_search(line, c_header_re))
          << entry.path().lexically_relative(root).string() << ": " << line;
    }
  }
}

}  // namespace
