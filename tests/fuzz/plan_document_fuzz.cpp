// libFuzzer target: a plan document (`venvfix plan -o FILE`), which `apply FILE` and `wheelhouse`
// read back, often on other machines of a fleet, and which a hand may have edited. For what
// parses: every install names a wheel file, a URL and a sha256 of 64 lowercase hex digits; the
// plan written back (to_text) reads again, and that text is a fixed point. A refusal names the
// source.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "fuzz_check.hpp"
#include "venvfix/plan/document.hpp"

namespace {

bool is_hex64(const std::string& text) {
  return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto plan = venvfix::plan::parse_plan(venvfix::fuzz::as_text(data, size), "plan.json");
  if (!plan) {
    VENVFIX_FUZZ_CHECK(plan.error().message.find("plan.json") != std::string::npos);
    return 0;
  }
  for (const venvfix::plan::Action& action : plan->actions) {
    if (const auto* install = std::get_if<venvfix::plan::Install>(&action)) {
      VENVFIX_FUZZ_CHECK(is_hex64(install->sha256));
      VENVFIX_FUZZ_CHECK(!install->file.empty() && !install->url.empty());
    }
  }
  const std::string text = venvfix::plan::to_text(*plan);
  auto again = venvfix::plan::parse_plan(text, "plan.json");
  VENVFIX_FUZZ_CHECK(again);
  VENVFIX_FUZZ_CHECK(venvfix::plan::to_text(*again) == text);
  return 0;
}
