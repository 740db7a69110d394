// Marker::parse and evaluate() on arbitrary bytes (deep nesting, odd quotes, non-ASCII).
// The text form must re-parse to the same text and the same answers.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "fuzz_check.hpp"
#include "venvfix/pep/marker.hpp"

using venvfix::pep::Marker;
using venvfix::pep::MarkerEnvironment;
using venvfix::pep::TargetPython;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto marker = Marker::parse(venvfix::fuzz::as_text(data, size));
  if (!marker) return 0;
  MarkerEnvironment env = venvfix::pep::marker_environment_for(
      TargetPython{3, 12, "cp", "x86_64", {{2, 36}}, {}, "3.12.3"});
  env.platform_release = "6.1.0-13-amd64";
  env.platform_version = "#1 SMP";
  const std::set<std::string> extras = {"cublas", "Test_Extra"};
  bool plain = marker->evaluate(env);
  bool with_extras = marker->evaluate(env, extras);
  std::string text = marker->to_string();
  auto again = Marker::parse(text);
  VENVFIX_FUZZ_CHECK(again);
  VENVFIX_FUZZ_CHECK(again->to_string() == text);
  VENVFIX_FUZZ_CHECK(again->evaluate(env) == plain);
  VENVFIX_FUZZ_CHECK(again->evaluate(env, extras) == with_extras);
  return 0;
}
