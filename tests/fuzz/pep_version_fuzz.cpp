// Version::parse on arbitrary bytes; for what parses: the canonical text is a fixed point that
// compares equal, and the order between two versions is antisymmetric and agrees with the
// public/base helpers.
#include <cstddef>
#include <cstdint>

#include "fuzz_check.hpp"
#include "venvfix/pep/version.hpp"

using venvfix::pep::Version;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto [first, second] = venvfix::fuzz::split_once(venvfix::fuzz::as_text(data, size));
  auto a = Version::parse(first);
  auto b = Version::parse(second);
  if (a) {
    auto again = Version::parse(a->to_string());
    VENVFIX_FUZZ_CHECK(again);
    VENVFIX_FUZZ_CHECK(again->to_string() == a->to_string());
    VENVFIX_FUZZ_CHECK(*again == *a);
    auto pub = Version::parse(a->public_version());
    VENVFIX_FUZZ_CHECK(pub && !pub->has_local());
    VENVFIX_FUZZ_CHECK(Version::compare_public(*pub, *a) == 0);
    VENVFIX_FUZZ_CHECK(*pub <= *a);
    auto base = Version::parse(a->base_version());
    VENVFIX_FUZZ_CHECK(base && Version::same_base(*base, *a));
  } else {
    VENVFIX_FUZZ_CHECK(!a.error().message.empty());
  }
  if (a && b) {
    auto ab = *a <=> *b;
    auto ba = *b <=> *a;
    VENVFIX_FUZZ_CHECK((ab < 0) == (ba > 0));
    VENVFIX_FUZZ_CHECK((ab == 0) == (ba == 0));
    VENVFIX_FUZZ_CHECK((ab == 0) == (*a == *b));
    if (ab == 0) VENVFIX_FUZZ_CHECK(a->local() == b->local());
  }
  return 0;
}
