// SpecifierSet::parse and contains()/filter() on arbitrary bytes: first line the set, second
// line a version. Checks that the text form re-parses to the same set and answers.
#include <array>
#include <cstddef>
#include <cstdint>

#include "fuzz_check.hpp"
#include "venvfix/pep/specifier.hpp"

using venvfix::pep::PreReleases;
using venvfix::pep::SpecifierSet;
using venvfix::pep::Version;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto [set_text, version_text] = venvfix::fuzz::split_once(venvfix::fuzz::as_text(data, size));
  auto set = SpecifierSet::parse(set_text);
  if (!set) return 0;
  auto again = SpecifierSet::parse(set->to_string());
  VENVFIX_FUZZ_CHECK(again);
  VENVFIX_FUZZ_CHECK(again->to_string() == set->to_string());
  auto version = Version::parse(version_text);
  if (!version) return 0;
  constexpr std::array<PreReleases, 3> modes = {PreReleases::unless_asked, PreReleases::allow,
                                                PreReleases::deny};
  for (PreReleases mode : modes) {
    bool in = set->contains(*version, mode);
    VENVFIX_FUZZ_CHECK(in == again->contains(*version, mode));
    if (in && mode == PreReleases::deny) VENVFIX_FUZZ_CHECK(!version->is_prerelease());
    if (in && mode != PreReleases::allow)
      VENVFIX_FUZZ_CHECK(set->contains(*version, PreReleases::allow));
    Version one[] = {*version};
    auto kept = set->filter(one, mode);
    VENVFIX_FUZZ_CHECK(kept.size() <= 1);
  }
  return 0;
}
