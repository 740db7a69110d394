// PEP 440 version specifiers (`>=2.1,<3`, `~=1.4.2`, `==12.*`, `!=2.0.1`, `===foo`) with the
// pre-release and local-version rules of the standard, as `packaging` implements them:
// - a pre-release matches only when asked for (PreReleases::allow) or when the specifier itself
//   names a pre-release with an inclusive operator (`>=2.0rc1`, `==2.0b1`, `~=1.0a1`);
// - `==V` and `!=V` ignore the candidate's local label unless V has one;
//   `<=`, `>=` always ignore it;
// - `<V` never matches a pre-release of V unless V is itself a pre-release,
//   `>V` never matches a post-release or local version of V unless V is a post-release;
// - `==V.*` / `!=V.*` match by prefix on the normalised version (epoch-aware, zero-padded).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/pep/version.hpp"

namespace venvfix::pep {

// packaging's `prereleases=None/True/False`.
enum class PreReleases { unless_asked, allow, deny };

class Specifier {
 public:
  enum class Operator {
    compatible,
    equal,
    not_equal,
    less_equal,
    greater_equal,
    less,
    greater,
    arbitrary
  };

  // One clause, e.g. `>= 2.0`; whitespace around and after the operator is allowed.
  static Result<Specifier> parse(std::string_view text);

  Operator op() const { return m_op; }
  std::string_view op_text() const;
  // The version as written (whitespace stripped), `.*` included.
  const std::string& version_text() const { return m_text; }
  bool has_wildcard() const { return m_wildcard; }
  // `<op><version as written>`, as packaging's str(Specifier).
  std::string to_string() const;

  bool contains(const Version& candidate, PreReleases pre = PreReleases::unless_asked) const;
  // packaging's Specifier.prereleases default: an inclusive operator (==, >=, <=, ~=, ===)
  // naming a pre-release.
  bool allows_prereleases() const { return m_allows_pre; }

 private:
  bool matches(const Version& candidate) const;
  bool prefix_match(const Version& candidate) const;

  Operator m_op = Operator::equal;
  std::string m_text;
  std::optional<Version> m_version;   // absent only for `===` with a non-PEP 440 string
  std::vector<std::string> m_prefix;  // wildcard and ~=: the parts to prefix-match
  bool m_wildcard = false;
  bool m_allows_pre = false;
};

class SpecifierSet {
 public:
  // Comma-separated clauses; empty clauses are skipped, so "" (and ",") is the set that
  // matches every final release.
  static Result<SpecifierSet> parse(std::string_view text);

  bool contains(const Version& candidate, PreReleases pre = PreReleases::unless_asked) const;
  // packaging's SpecifierSet.filter, order kept. With no clauses and PreReleases::unless_asked
  // the pre-releases come back only when nothing else does. With clauses, pre-releases pass
  // only when allowed or asked for by a clause (packaging passes bool(prereleases) to each
  // clause, so its "only pre-releases match" fallback never triggers there; pip relies on that).
  std::vector<Version> filter(std::span<const Version> versions,
                              PreReleases pre = PreReleases::unless_asked) const;
  // Sorted, de-duplicated clauses joined by "," (packaging's str(SpecifierSet)); "" when empty.
  std::string to_string() const;

  bool empty() const { return m_specifiers.empty(); }
  std::size_t size() const { return m_specifiers.size(); }
  const std::vector<Specifier>& specifiers() const { return m_specifiers; }
  // packaging's SpecifierSet.prereleases: nullopt when empty, else whether any clause asks.
  std::optional<bool> prereleases() const;

 private:
  bool resolve(PreReleases pre) const;
  std::vector<Specifier> m_specifiers;
};

}  // namespace venvfix::pep
