// libFuzzer target: read_wheel_bytes over arbitrary bytes, then, for what it accepts,
// check_wheel_bytes (inflate, hash and size of every member). Neither may crash, hang or read
// out of bounds; refusals are fine. Small limits keep a fuzzed zip bomb cheap.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_check.hpp"
#include "venvfix/wheel/wheel.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  venvfix::wheel::ReadLimits limits;
  limits.max_total_bytes = 8u << 20;
  limits.ratio_floor_bytes = 1u << 20;
  limits.max_members = 10'000;
  auto contents = venvfix::wheel::read_wheel_bytes(bytes, "demo_pkg-1.0-py3-none-any.whl", limits);
  if (!contents) return 0;
  VENVFIX_FUZZ_CHECK(!contents->dist_info.empty());
  VENVFIX_FUZZ_CHECK(contents->total_size <= limits.max_total_bytes);
  for (const auto& member : contents->members) {
    VENVFIX_FUZZ_CHECK(!member.name.empty() && member.name.front() != '/');
    VENVFIX_FUZZ_CHECK(member.name != ".." && !member.name.starts_with("../") &&
                       member.name.find("/../") == std::string::npos &&
                       !member.name.ends_with("/.."));
  }
  auto checked = venvfix::wheel::check_wheel_bytes(*contents, bytes);
  (void)checked;
  return 0;
}
