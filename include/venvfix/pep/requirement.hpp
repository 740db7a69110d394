// PEP 508 dependency specifications, as found in `Requires-Dist`:
//   nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux" and platform_machine == "x86_64"
//   cuda-toolkit[cublas,cudart]==13.0.2
//   torch @ https://download.pytorch.org/whl/cu128/torch-2.8.0%2Bcu128-cp312-....whl ; os_name ==
//   "posix"
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/pep/marker.hpp"
#include "venvfix/pep/specifier.hpp"

namespace venvfix::pep {

struct Requirement {
  std::string name;                 // as written; compare with normalize_name()
  std::vector<std::string> extras;  // normalised (PEP 685), sorted, unique
  SpecifierSet specifier;           // empty when none (or when `url` is set)
  std::string url;                  // the `@ URL` form; empty when none
  std::optional<Marker> marker;

  // Errors name the text and the position. A URL needs a scheme (`https:`, `file:`) and,
  // except for `file:`, a host.
  static Result<Requirement> parse(std::string_view text);

  // packaging's str(Requirement): `name[a,b]<2,>=1; marker` or `name @ url ; marker`.
  std::string to_string() const;
};

}  // namespace venvfix::pep
