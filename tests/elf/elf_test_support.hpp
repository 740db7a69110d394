// Helpers for the elf tests: compile real shared objects with the system compiler, run
// commands, and ask the real dynamic loader what it loads.
#pragma once

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
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

// An object file compiled once per process and `flags` (compiling dominates the cost of a
// build; linking many shared objects from one .o keeps each test fast).
inline fs::path compiled_object(const std::string& flags) {
  static std::optional<TempDir> dir;
  static std::map<std::string, fs::path> objects;
  if (auto it = objects.find(flags); it != objects.end()) return it->second;
  if (!dir) {
    auto created = TempDir::create("venvfix-elf-objects-");
    if (!created) return {};
    dir.emplace(std::move(*created));
  }
  const fs::path source = dir->path() / "object.c";
  fs::path object = dir->path() / ("object" + std::to_string(objects.size()) + ".o");  // returned
  if (FILE* f = std::fopen(source.c_str(), "w")) {
    std::fputs("int venvfix_test_symbol(void) { return 1; }\n", f);
    std::fclose(f);
  }
  CommandResult result = run_command("cc -c -fPIC " + flags + " -o " + quote(object.string()) +
                                     " " + quote(source.string()));
  if (result.status != 0) return {};
  objects.emplace(flags, object);
  return object;
}

// Links `out` as a shared object; fails the test on a toolchain error.
inline void build_shared_object(const fs::path& out, const SharedObject& spec) {
  fs::create_directories(out.parent_path());
  const fs::path object = compiled_object(spec.extra_flags);
  ASSERT_FALSE(object.empty()) << "cannot compile with flags " << spec.extra_flags;
  std::string command = "cc -shared -o " + quote(out.string()) + " " + quote(object.string());
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

// Runs a shell command that runs the loader in trace mode and parses what it prints.
inline LoaderListing loader_list_command(const std::string& command) {
  LoaderListing listing;
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

// Runs the loader in trace mode as ldd does (`LD_TRACE_LOADED_OBJECTS=1 ld.so root`) with an
// empty environment plus `env` (e.g. "LD_LIBRARY_PATH=…").
inline LoaderListing loader_list(const fs::path& root, const std::string& env = "") {
  return loader_list_command("env -i LD_TRACE_LOADED_OBJECTS=1 " + env + " " +
                             host_interpreter_path() + " " + quote(root.string()));
}

}  // namespace venvfix::elf::testing
