// Requirement::parse on arbitrary bytes; what parses must print as text that parses back to
// the same text.
#include <cstddef>
#include <cstdint>

#include "fuzz_check.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/pep/requirement.hpp"

using venvfix::pep::Requirement;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto req = Requirement::parse(venvfix::fuzz::as_text(data, size));
  if (!req) return 0;
  VENVFIX_FUZZ_CHECK(venvfix::pep::is_valid_name(req->name));
  VENVFIX_FUZZ_CHECK(req->url.empty() || req->specifier.empty());
  auto again = Requirement::parse(req->to_string());
  VENVFIX_FUZZ_CHECK(again);
  VENVFIX_FUZZ_CHECK(again->to_string() == req->to_string());
  VENVFIX_FUZZ_CHECK(again->extras == req->extras);
  return 0;
}
