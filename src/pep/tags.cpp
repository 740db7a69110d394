#include "venvfix/pep/tags.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace venvfix::pep {

namespace {

std::string nodot(int major, int minor) {
  return std::to_string(major) + std::to_string(minor);
}

std::string normalize_arch(std::string_view arch) {
  std::string out(arch);
  std::replace(out.begin(), out.end(), '-', '_');
  std::replace(out.begin(), out.end(), '.', '_');
  return out;
}

// packaging's _have_compatible_abi: the architectures manylinux is defined for (armv7l and
// i686 are taken to be hard-float / 32-bit interpreters, as the target says so).
bool manylinux_arch(std::string_view arch) {
  constexpr std::array<std::string_view, 9> k_arches = {
      "x86_64", "aarch64", "ppc64", "ppc64le", "s390x", "armv7l", "i686", "loongarch64", "riscv64"};
  return std::find(k_arches.begin(), k_arches.end(), arch) != k_arches.end();
}

// packaging's _LAST_GLIBC_MINOR: the last minor of an older glibc major is taken to be 50.
constexpr int k_last_glibc_minor = 50;

}  // namespace

std::vector<std::string> linux_platform_tags(const TargetPython& target) {
  const std::string arch = normalize_arch(target.arch);
  std::vector<std::string> tags;
  if (target.glibc && manylinux_arch(arch)) {
    const auto [cur_major, cur_minor] = *target.glibc;
    // Older glibc than 2.5 (x86) or 2.17 (others) has no manylinux tag.
    const std::pair<int, int> too_old =
        (arch == "x86_64" || arch == "i686") ? std::pair{2, 4} : std::pair{2, 16};
    std::vector<std::pair<int, int>> maxima = {{cur_major, cur_minor}};
    for (int major = cur_major - 1; major > 1; --major)
      maxima.emplace_back(major, k_last_glibc_minor);
    for (const auto& [major, max_minor] : maxima) {
      int min_minor = major == too_old.first ? too_old.second : -1;
      for (int minor = max_minor; minor > min_minor; --minor) {
        tags.push_back("manylinux_" + std::to_string(major) + "_" + std::to_string(minor) + "_" +
                       arch);
        if (major == 2 && minor == 17) tags.push_back("manylinux2014_" + arch);
        if (major == 2 && minor == 12) tags.push_back("manylinux2010_" + arch);
        if (major == 2 && minor == 5) tags.push_back("manylinux1_" + arch);
      }
    }
  }
  if (target.musl) {
    for (int minor = target.musl->second; minor >= 0; --minor) {
      tags.push_back("musllinux_" + std::to_string(target.musl->first) + "_" +
                     std::to_string(minor) + "_" + arch);
    }
  }
  tags.push_back("linux_" + arch);
  return tags;
}

std::vector<Tag> supported_tags(const TargetPython& target) {
  const std::vector<std::string> platforms = linux_platform_tags(target);
  const int major = target.major;
  const int minor = target.minor;
  const std::string interpreter = target.implementation + nodot(major, minor);
  std::vector<Tag> tags;
  auto add_all = [&](const std::string& interp, const std::string& abi) {
    for (const std::string& platform : platforms) tags.push_back({interp, abi, platform});
  };

  if (target.implementation == "cp") {
    // packaging's _cpython_abis for a release build: `m` (pymalloc) before 3.8, `u` (UCS-4)
    // before 3.3.
    std::string abi = "cp" + nodot(major, minor);
    const bool abi3 = std::pair{major, minor} >= std::pair{3, 2};
    if (std::pair{major, minor} < std::pair{3, 8}) abi += "m";
    if (std::pair{major, minor} < std::pair{3, 3}) abi += "u";
    add_all(interpreter, abi);
    if (abi3) add_all(interpreter, "abi3");
    add_all(interpreter, "none");
    if (abi3) {
      for (int older = minor - 1; older > 1; --older) add_all("cp" + nodot(major, older), "abi3");
    }
  } else {
    // generic_tags() without the interpreter's SOABI, which only the interpreter knows.
    add_all(interpreter, "none");
  }

  // compatible_tags(): pyXY, pyX, then pyX(Y-1) .. pyX0 on each platform, the interpreter on
  // `any`, then the same py list on `any`.
  std::vector<std::string> py = {"py" + nodot(major, minor), "py" + std::to_string(major)};
  for (int older = minor - 1; older >= 0; --older) py.push_back("py" + nodot(major, older));
  for (const std::string& p : py) add_all(p, "none");
  tags.push_back({interpreter, "none", "any"});
  for (const std::string& p : py) tags.push_back({p, "none", "any"});
  return tags;
}

}  // namespace venvfix::pep
