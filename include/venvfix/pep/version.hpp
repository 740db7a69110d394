// PEP 440 versions: parsing, the canonical string, and the total order that `packaging`
// defines (epoch, release, pre, post, dev, local).
//
// Numbers of any size are accepted, as `packaging` accepts arbitrary Python ints: every number
// is kept exactly (a uint64 when it fits, its normalised digit string when it does not) and the
// order compares those exact values, so `1.18446744073709551616` sorts after
// `1.18446744073709551615` and nothing overflows. The numeric accessors (`release()`, `epoch()`,
// `pre_number()`, ...) saturate at their type's maximum for such numbers; `to_string()` and the
// comparisons are always exact.
//
// Input is ASCII: leading and trailing whitespace (the characters Python's `str.isspace()`
// accepts in ASCII) is ignored, any other byte outside the grammar is an error.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"

namespace venvfix::pep {

// One number of a version, exact at any size.
struct VersionNumber {
  std::uint64_t value = 0;  // saturated at UINT64_MAX when `big` is set
  std::string big;          // normalised digits when the number exceeds 2^64-1, else empty

  friend std::strong_ordering operator<=>(const VersionNumber& a, const VersionNumber& b);
  friend bool operator==(const VersionNumber& a, const VersionNumber& b) { return (a <=> b) == 0; }
  std::string to_string() const;
};

class Version {
 public:
  enum class PreKind : std::uint8_t { none, alpha, beta, rc };

  // Parses any valid PEP 440 version (case-insensitive, with the spelling variants of the
  // standard: `1.0-alpha.1`, `v1.0`, `1.0-1`, `1.0.POST`, `1.0+Ubuntu-1`). An error names the
  // text and the position of the first character that does not fit.
  static Result<Version> parse(std::string_view text);

  // The canonical form, exactly as packaging's str(Version): `1!2.0rc1.post3.dev4+abc.5`.
  const std::string& to_string() const { return m_text; }
  // Without the local label: `2.0+cu128` -> `2.0`.
  std::string public_version() const;
  // Epoch and release only: `1!2.0rc1+x` -> `1!2.0`.
  std::string base_version() const;
  // The normalised local label (lowercase, `.`-separated, numeric parts without leading zeros);
  // empty when there is none.
  const std::string& local() const { return m_local; }
  bool has_local() const { return !m_local.empty(); }

  int epoch() const;                                                    // saturates at INT_MAX
  std::span<const std::uint64_t> release() const { return m_release; }  // saturated components
  PreKind pre_kind() const { return m_pre_kind; }
  std::optional<std::uint64_t> pre_number() const;
  std::optional<std::uint64_t> post() const;
  std::optional<std::uint64_t> dev() const;

  bool is_prerelease() const { return m_pre_kind != PreKind::none || m_has_dev; }
  bool is_postrelease() const { return m_has_post; }
  bool is_devrelease() const { return m_has_dev; }

  // The order of PEP 440 and packaging. Equality is order-equality: `1.0 == 1.0.0`,
  // `1.0+ABC == 1.0+abc`, although their strings may differ.
  friend std::strong_ordering operator<=>(const Version& a, const Version& b);
  friend bool operator==(const Version& a, const Version& b) { return (a <=> b) == 0; }

  // Orders as if neither side had a local label (what `<=`, `>=` and `==` without a local
  // label in a specifier do).
  static std::strong_ordering compare_public(const Version& a, const Version& b);
  // True when both have the same epoch and release (trailing zeros ignored).
  static bool same_base(const Version& a, const Version& b);

  // The number list used for `.*` prefix matching, as packaging's _version_split of the
  // canonical public string: epoch, release components, then `a1`/`b1`/`rc1`, `postN`, `devN`.
  std::vector<std::string> prefix_parts() const;

 private:
  friend class VersionParser;

  std::string m_text;   // canonical string
  std::string m_local;  // normalised local label, empty if none
  VersionNumber m_epoch;
  std::vector<std::uint64_t> m_release;    // saturated
  std::vector<std::string> m_release_big;  // exact digits per component, only when one overflows
  VersionNumber m_pre;
  VersionNumber m_post;
  VersionNumber m_dev;
  PreKind m_pre_kind = PreKind::none;
  bool m_has_post = false;
  bool m_has_dev = false;
};

}  // namespace venvfix::pep
