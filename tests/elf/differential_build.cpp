// Makes the differential suite's files and runs its oracle (tests/elf/differential.hpp).
//
// Compiling dominates the cost of a shared object, so six templates are linked once from one
// object file (with or without DT_SONAME; DT_RPATH, DT_RUNPATH or none), each carrying long
// placeholder strings. A library is a copy of a template with its soname and search path
// written over the placeholders (the .dynstr bytes of a real linker output; nothing moves),
// then one patchelf call for what needs new entries (--add-needed…, --no-default-lib).
// patchelf 0.14 (Debian 12) corrupts the string table when --set-soname or --set-rpath share
// a call with --add-needed (NixOS/patchelf#193), which is why those two are not its job here.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include <fmt/format.h>

#include "elf/differential.hpp"
#include "elf/elf_test_support.hpp"
#include "support/paths.hpp"

namespace venvfix::elf::differential {

namespace {

using testing::quote;
using testing::run_command;

const std::string k_soname_placeholder = "libvfd_" + std::string(120, 'S');
const std::string k_path_placeholder(1000, 'R');

constexpr const char* k_template_source =
    R"(// dlopen from inside this object: glibc takes it as the caller.
#include <dlfcn.h>
#include <stddef.h>
const char* vfd_open(const char* name) {
  void* handle = dlopen(name, RTLD_NOW);
  return handle != NULL ? NULL : dlerror();
}
)";

std::string template_name(bool soname, PathKind kind) {
  static const char* kinds[] = {"none", "rpath", "runpath"};
  return std::string("t_") + (soname ? "s_" : "n_") + kinds[static_cast<int>(kind)] + ".so";
}

bool write_file(const fs::path& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  return static_cast<bool>(out);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Overwrites the one occurrence of `placeholder` with `value`, NUL-padded.
bool put(std::string& data, const std::string& placeholder, const std::string& value) {
  const auto at = data.find(placeholder);
  if (at == std::string::npos || value.size() >= placeholder.size() ||
      data.find(placeholder, at + 1) != std::string::npos) {
    return false;
  }
  std::string padded = value;
  padded.resize(placeholder.size(), '\0');
  data.replace(at, placeholder.size(), padded);
  return true;
}

// Runs the shell scripts side by side (two cores) and reports the first failure.
std::string run_scripts(const std::vector<fs::path>& scripts) {
  std::string command = "fail=0;";
  for (std::size_t i = 0; i < scripts.size(); ++i) {
    command += " sh -e " + quote(scripts[i].string()) + " & p" + std::to_string(i) + "=$!;";
  }
  for (std::size_t i = 0; i < scripts.size(); ++i) {
    command += " wait $p" + std::to_string(i) + " || fail=1;";
  }
  command += " exit $fail";
  auto result = run_command("sh -c " + quote(command));
  return result.status == 0 ? std::string() : "script failed: " + result.output;
}

}  // namespace

std::string build_templates(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!write_file(dir / "vfd.c", k_template_source)) return "cannot write " + dir.string();
  const std::string object = (dir / "vfd.o").string();
  auto compiled =
      run_command("cc -c -fPIC -O1 -o " + quote(object) + " " + quote((dir / "vfd.c").string()));
  if (compiled.status != 0) return "cc: " + compiled.output;
  for (bool soname : {true, false}) {
    for (PathKind kind : {PathKind::none, PathKind::rpath, PathKind::runpath}) {
      std::string command = "cc -shared -o " + quote((dir / template_name(soname, kind)).string()) +
                            " " + quote(object) + " -Wl,--no-as-needed";
      if (soname) command += " -Wl,-soname," + k_soname_placeholder;
      if (kind != PathKind::none) {
        command += kind == PathKind::rpath ? " -Wl,--disable-new-dtags" : " -Wl,--enable-new-dtags";
        command += " -Wl,-rpath," + k_path_placeholder;
      }
      auto linked = run_command(command);
      if (linked.status != 0) return command + ": " + linked.output;
    }
  }
  return {};
}

std::string build_graphs(const fs::path& templates, const std::vector<Graph>& graphs,
                         const fs::path& scratch) {
  std::map<std::string, std::string> bytes;
  for (bool soname : {true, false}) {
    for (PathKind kind : {PathKind::none, PathKind::rpath, PathKind::runpath}) {
      const std::string name = template_name(soname, kind);
      bytes[name] = read_file(templates / name);
    }
  }
  std::vector<std::ostringstream> scripts(2);
  std::size_t calls = 0;
  for (const Graph& graph : graphs) {
    for (const Library& lib : graph.libraries) {
      std::string data = bytes[template_name(!lib.soname.empty(), lib.kind)];
      if ((!lib.soname.empty() && !put(data, k_soname_placeholder, lib.soname)) ||
          (lib.kind != PathKind::none && !put(data, k_path_placeholder, lib.path))) {
        return "cannot write the placeholders of " + lib.file_name;
      }
      const bool patch = !lib.needed.empty() || lib.nodeflib;
      for (const fs::path& dir : lib.dirs) {
        std::error_code ec;
        fs::create_directories(dir, ec);
        if (!lib.link_name.empty()) fs::create_symlink(lib.file_name, dir / lib.link_name, ec);
        if (ec) return "cannot make " + (dir / lib.link_name).string() + ": " + ec.message();
      }
      const fs::path first = lib.dirs.front() / lib.file_name;
      if (!write_file(first, data)) return "cannot write " + first.string();
      if (!patch) {
        for (std::size_t i = 1; i < lib.dirs.size(); ++i) {
          if (!write_file(lib.dirs[i] / lib.file_name, data)) return "cannot write a copy";
        }
        continue;
      }
      std::ostringstream& script = scripts[calls++ % scripts.size()];
      script << "patchelf";
      for (const std::string& name : lib.needed) script << " --add-needed " << quote(name);
      if (lib.nodeflib) script << " --no-default-lib";
      script << " " << quote(first.string()) << "\n";
      for (std::size_t i = 1; i < lib.dirs.size(); ++i) {
        script << "cp " << quote(first.string()) << " "
               << quote((lib.dirs[i] / lib.file_name).string()) << "\n";
      }
    }
  }
  std::vector<fs::path> files;
  for (std::size_t i = 0; i < scripts.size(); ++i) {
    files.push_back(scratch / ("patch" + std::to_string(i) + ".sh"));
    if (!write_file(files.back(), scripts[i].str())) return "cannot write " + files.back().string();
  }
  return run_scripts(files);
}

std::string build_test_cache(const Layout& layout, const fs::path& cache) {
  const fs::path conf = layout.root / "ld.so.conf";
  std::error_code ec;
  fs::create_directories(layout.cachedir(), ec);
  if (!write_file(conf, layout.cachedir().string() + "\n")) return "cannot write " + conf.string();
  auto built =
      run_command("ldconfig -X -C " + quote(cache.string()) + " -f " + quote(conf.string()));
  return built.status == 0 ? std::string() : "ldconfig: " + built.output;
}

std::string run_oracles(const Layout& layout, const fs::path& python, const fs::path& cache,
                        const std::vector<Graph>& graphs,
                        std::map<std::size_t, std::string>& lines) {
  const fs::path oracle = venvfix::testing::source_dir() / "tests" / "elf" / "dlopen_oracle.py";
  std::vector<std::ostringstream> inputs(k_env_count);
  for (const Graph& graph : graphs) {
    for (const Case& c : graph.cases) {
      nlohmann::json steps = nlohmann::json::array();
      for (const Step& step : c.steps) {
        if (step.kind == Step::Kind::call) {
          steps.push_back({"call", step.path.string(), step.name});
        } else {
          steps.push_back({step.kind == Step::Kind::root ? "root" : "preload", step.path.string()});
        }
      }
      nlohmann::json line = {{"case", c.number}, {"steps", steps}, {"names", graph.names}};
      inputs[static_cast<int>(c.env)] << line.dump() << "\n";
    }
  }
  std::vector<fs::path> scripts;
  std::vector<fs::path> outputs;
  for (int e = 0; e < k_env_count; ++e) {
    const std::string text = inputs[e].str();
    if (text.empty()) continue;
    const std::string tag = "env" + std::to_string(e);
    const fs::path in = layout.root / (tag + ".jsonl");
    outputs.push_back(layout.root / (tag + ".out"));
    if (!write_file(in, text)) return "cannot write " + in.string();
    std::string command = "env -i PATH=/usr/bin:/bin";
    if (env_uses_llp(static_cast<Env>(e))) {
      command += " LD_LIBRARY_PATH=" + quote(layout.ld_library_path());
    }
    command += " " + quote(python.string()) + " " + quote(oracle.string()) + " " +
               quote(in.string()) + " " + quote(layout.root.string() + "/");
    if (env_uses_cache(static_cast<Env>(e))) {
      // The test cache over /etc/ld.so.cache, in a private mount namespace only.
      command = fmt::format("unshare -m --propagation private sh -c {}",
                            quote(fmt::format("mount --bind {} /etc/ld.so.cache && exec {}",
                                              quote(cache.string()), command)));
    }
    scripts.push_back(layout.root / (tag + ".sh"));
    if (!write_file(scripts.back(), command + " > " + quote(outputs.back().string()) + "\n")) {
      return "cannot write " + scripts.back().string();
    }
  }
  if (std::string error = run_scripts(scripts); !error.empty()) return "oracle: " + error;
  for (const fs::path& output : outputs) {
    std::istringstream in(read_file(output));
    for (std::string line; std::getline(in, line);) {
      auto parsed = nlohmann::json::parse(line, nullptr, false);
      if (parsed.is_discarded() || !parsed.contains("case")) return "oracle printed: " + line;
      lines[parsed["case"].get<std::size_t>()] = line;
    }
  }
  return {};
}

}  // namespace venvfix::elf::differential
