// WheelFilename::parse on arbitrary bytes, and select_best_wheel() over what parses.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_check.hpp"
#include "venvfix/pep/wheel_filename.hpp"

using venvfix::pep::TargetPython;
using venvfix::pep::WheelFilename;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto [first, second] = venvfix::fuzz::split_once(venvfix::fuzz::as_text(data, size));
  std::vector<WheelFilename> wheels;
  for (auto text : {first, second}) {
    auto wheel = WheelFilename::parse(text);
    if (!wheel) continue;
    VENVFIX_FUZZ_CHECK(!wheel->python_tags.empty() && !wheel->abi_tags.empty() &&
                       !wheel->platform_tags.empty());
    VENVFIX_FUZZ_CHECK(wheel->tags().size() == wheel->python_tags.size() * wheel->abi_tags.size() *
                                                   wheel->platform_tags.size());
    wheels.push_back(std::move(*wheel));
  }
  static const auto supported =
      venvfix::pep::supported_tags(TargetPython{3, 12, "cp", "x86_64", {{2, 36}}, {}, ""});
  auto best = venvfix::pep::select_best_wheel(wheels, supported);
  VENVFIX_FUZZ_CHECK(!best || *best < wheels.size());
  return 0;
}
