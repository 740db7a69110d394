// Wheel file names (PEP 427, 491): `{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl`
// with compressed tag sets (`py2.py3-none-any`, `manylinux2014_x86_64.manylinux_2_17_x86_64`),
// and pip's choice of the best wheel for an interpreter.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/pep/tags.hpp"
#include "venvfix/pep/version.hpp"

namespace venvfix::pep {

struct WheelFilename {
  std::string name;             // as written (`nvidia_cudnn_cu12`)
  std::string normalized_name;  // PEP 503 (`nvidia-cudnn-cu12`)
  Version version;
  std::optional<std::pair<int, std::string>> build_tag;  // `1_abc` -> {1, "_abc"}
  std::vector<std::string> python_tags;                  // as written, e.g. {"py2", "py3"}
  std::vector<std::string> abi_tags;
  std::vector<std::string> platform_tags;

  // Refuses, with the reason, a name without `.whl`, with other than 5 or 6 dash-separated
  // parts, a project name with characters other than letters, digits, `.` and `_` (or with
  // `__`), an invalid version, a build tag not starting with a digit, or an empty tag.
  static Result<WheelFilename> parse(std::string_view filename);

  // Every (python, abi, platform) combination, lowercase, in the order written.
  std::vector<Tag> tags() const;
};

// The index of the wheel pip would install from `wheels` for an interpreter accepting
// `supported` (best first): among the wheels with a supported tag, the highest version, then
// the best (lowest) tag index, then the highest build tag (none sorts lowest); the first such
// wheel on a tie. nullopt when no wheel is compatible.
std::optional<std::size_t> select_best_wheel(std::span<const WheelFilename> wheels,
                                             std::span<const Tag> supported);

}  // namespace venvfix::pep
