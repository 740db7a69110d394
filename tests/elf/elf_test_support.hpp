// Helpers for the elf tests: compile real shared objects with the system compiler, run
// commands, and ask the real dynamic loader what it loads.
#pragma once

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::elf::testing {

namespace fs = std::filesystem;

struct CommandResult {
  int status = -1;
  std::string output;  // stdout and stderr
};

inline CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, got);
  result.status = ::pclose(pipe);
  return result;
}

inline std::string quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

enum class Tags { rpath, runpath };

// What to build: a fluent description, e.g.
//   SharedObject("liba.so").needs(b).rpath({dir}, Tags::runpath)
struct SharedObject {
  explicit SharedObject(std::string soname_ = "") : soname(std::move(soname_)) {}
  SharedObject& needs(const fs::path& dependency) {
    link_with.push_back(dependency);
    return *this;
  }
  SharedObject& with_rpath(std::vector<std::string> dirs, Tags kind = Tags::rpath) {
    rpath = std::move(dirs);
    tags = kind;
    return *this;
  }
  SharedObject& flags(std::string text) {
    extra_flags = std::move(text);
    return *this;
  }

  std::string soname;               // empty: no DT_SONAME
  std::vector<fs::path> link_with;  // objects whose soname becomes a DT_NEEDED
  std::vector<std::string> rpath;   // joined with ':'
  Tags tags = Tags::rpath;
  std::string extra_flags;  // e.g. "-m32 -nostdlib"
};

// Compiles `out` as a shared object; fails the test on a compiler error.
inline void build_shared_object(const fs::path& out, const SharedObject& spec) {
  fs::create_directories(out.parent_path());
  const fs::path source = out.string() + ".c";
  {
    FILE* f = std::fopen(source.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fprintf(f, "int venvfix_test_symbol_%zu(void) { return 1; }\n",
                 std::hash<std::string>{}(out.string()) % 100000);
    std::fclose(f);
  }
  std::string command = "cc -shared -fPIC -o " + quote(out.string()) + " " + quote(source.string());
  command += " -Wl,--no-as-needed " + spec.extra_flags;
  if (!spec.soname.empty()) command += " -Wl,-soname," + quote(spec.soname);
  for (const fs::path& dep : spec.link_with) command += " " + quote(dep.string());
  if (!spec.rpath.empty()) {
    command += spec.tags == Tags::rpath ? " -Wl,--disable-new-dtags" : " -Wl,--enable-new-dtags";
    command += " -Wl,-rpath," + quote(venvfix::join(spec.rpath, ":"));
  }
  CommandResult result = run_command(command);
  ASSERT_EQ(result.status, 0) << command << "\n" << result.output;
}

// What the real loader lists: needed name -> path ("" when not found), in output order.
struct LoaderListing {
  std::vector<std::pair<std::string, std::string>> entries;
  std::string raw;
  int status = -1;
};

inline std::string host_interpreter_path() {
  return "/lib64/ld-linux-x86-64.so.2";
}

// Runs the loader in trace mode as ldd does (`LD_TRACE_LOADED_OBJECTS=1 ld.so root`) with an empty
// environment plus `env` (e.g. "LD_LIBRARY_PATH=…"), optionally prefixed by `wrapper` (e.g. an
// unshare command that mounts a test cache).
inline LoaderListing loader_list(const fs::path& root, const std::string& env = "",
                                 const std::string& wrapper = "") {
  LoaderListing listing;
  std::string command = wrapper + "env -i LD_TRACE_LOADED_OBJECTS=1 " + env + " " +
                        host_interpreter_path() + " " + quote(root.string());
  CommandResult result = run_command(command);
  listing.raw = result.output;
  listing.status = result.status;
  for (std::string_view line : venvfix::split(result.output, '\n')) {
    line = venvfix::trim(line);
    auto arrow = line.find(" => ");
    if (arrow == std::string_view::npos) continue;  // vdso, the interpreter, "statically linked"
    std::string name(line.substr(0, arrow));
    std::string_view rest = line.substr(arrow + 4);
    if (rest == "not found") {
      listing.entries.emplace_back(name, "");
      continue;
    }
    auto paren = rest.rfind(" (0x");
    listing.entries.emplace_back(name, std::string(rest.substr(0, paren)));
  }
  return listing;
}

}  // namespace venvfix::elf::testing
