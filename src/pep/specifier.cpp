#include "venvfix/pep/specifier.hpp"

#include <algorithm>

#include "pep/text.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::pep {

namespace {

struct OperatorSpelling {
  std::string_view text;
  Specifier::Operator op;
};

// Longest first, so `===` is not read as `==` followed by `=`.
constexpr OperatorSpelling k_operators[] = {
    {"===", Specifier::Operator::arbitrary}, {"~=", Specifier::Operator::compatible},
    {"==", Specifier::Operator::equal},      {"!=", Specifier::Operator::not_equal},
    {"<=", Specifier::Operator::less_equal}, {">=", Specifier::Operator::greater_equal},
    {"<", Specifier::Operator::less},        {">", Specifier::Operator::greater},
};

Error invalid(std::string_view text, std::string_view why) {
  return make_error(ExitCode::usage, "invalid version specifier \"{}\": {}",
                    printable_excerpt(text), why);
}

bool has_space(std::string_view s) {
  return std::any_of(s.begin(), s.end(), text::is_python_space);
}

}  // namespace

std::string_view Specifier::op_text() const {
  for (const auto& spelling : k_operators) {
    if (spelling.op == m_op) return spelling.text;
  }
  return "";
}

std::string Specifier::to_string() const {
  return std::string(op_text()) + m_text;
}

Result<Specifier> Specifier::parse(std::string_view input) {
  std::string_view t = text::trim_python_space(input);
  Specifier spec;
  std::size_t op_len = 0;
  for (const auto& spelling : k_operators) {
    if (t.substr(0, spelling.text.size()) == spelling.text) {
      spec.m_op = spelling.op;
      op_len = spelling.text.size();
      break;
    }
  }
  if (op_len == 0) {
    return invalid(input, "expected an operator (==, !=, <=, >=, <, >, ~=, ===) at the start");
  }
  std::string_view rest = text::trim_python_space(t.substr(op_len));
  if (has_space(rest)) return invalid(input, "the version contains whitespace");
  spec.m_text = std::string(rest);

  if (spec.m_op == Operator::arbitrary) {
    // `===` compares strings; it needs no PEP 440 version.
    if (auto v = Version::parse(rest)) {
      spec.m_allows_pre = v->is_prerelease();
      spec.m_version = std::move(*v);
    }
    return spec;
  }

  std::string_view body = rest;
  const bool equality = spec.m_op == Operator::equal || spec.m_op == Operator::not_equal;
  if (equality && body.size() >= 2 && body.substr(body.size() - 2) == ".*") {
    spec.m_wildcard = true;
    body.remove_suffix(2);
  }
  auto version = Version::parse(body);
  if (!version) {
    return invalid(input, fmt::format("{} is not a PEP 440 version", printable_excerpt(body)));
  }
  if (spec.m_wildcard && (version->is_devrelease() || version->has_local())) {
    return invalid(input, "a .* prefix cannot follow a dev release or a local label");
  }
  if (!equality && version->has_local()) {
    return invalid(
        input, fmt::format("a local label (+{}) is allowed only with == and !=", version->local()));
  }
  if (spec.m_op == Operator::compatible && version->release().size() < 2) {
    return invalid(input, "~= needs a version with at least two release numbers");
  }
  if (spec.m_wildcard) {
    spec.m_prefix = version->prefix_parts();
  } else if (spec.m_op == Operator::compatible) {
    // ~=X.Y.Z is >=X.Y.Z together with ==X.Y.*: the prefix is the epoch and the release
    // without its last number.
    std::vector<std::string> parts = version->prefix_parts();
    spec.m_prefix.assign(
        parts.begin(),
        parts.begin() + 1 + static_cast<std::ptrdiff_t>(version->release().size()) - 1);
  }
  bool inclusive = spec.m_op == Operator::equal || spec.m_op == Operator::greater_equal ||
                   spec.m_op == Operator::less_equal || spec.m_op == Operator::compatible;
  spec.m_allows_pre = inclusive && version->is_prerelease();
  spec.m_version = std::move(*version);
  return spec;
}

bool Specifier::prefix_match(const Version& candidate) const {
  // packaging: split the candidate's public version, zero-pad its epoch+release run to the
  // length of the specifier's, cut it to the specifier's length, compare part by part.
  std::vector<std::string> parts = candidate.prefix_parts();
  auto numeric_run = [](const std::vector<std::string>& p) {
    std::size_t n = 0;
    while (n < p.size() && !p[n].empty() && text::is_digit(p[n][0])) ++n;
    return n;
  };
  std::size_t have = numeric_run(parts);
  std::size_t want = numeric_run(m_prefix);
  if (want > have) {
    parts.insert(parts.begin() + static_cast<std::ptrdiff_t>(have), want - have, "0");
  }
  if (parts.size() < m_prefix.size()) return false;
  return std::equal(m_prefix.begin(), m_prefix.end(), parts.begin());
}

bool Specifier::matches(const Version& c) const {
  if (m_op == Operator::arbitrary) {
    return to_lower_ascii(c.to_string()) == to_lower_ascii(m_text);
  }
  const Version& v = *m_version;
  switch (m_op) {
    case Operator::compatible:
      return Version::compare_public(c, v) >= 0 && prefix_match(c);
    case Operator::equal:
    case Operator::not_equal: {
      bool equal = m_wildcard      ? prefix_match(c)
                   : v.has_local() ? c == v
                                   : Version::compare_public(c, v) == 0;
      return (m_op == Operator::equal) == equal;
    }
    case Operator::less_equal:
      return Version::compare_public(c, v) <= 0;
    case Operator::greater_equal:
      return Version::compare_public(c, v) >= 0;
    case Operator::less:
      if (!(c < v)) return false;
      // <3.1 does not match 3.1.dev0 or 3.1rc1, unless the bound is itself a pre-release.
      return !(!v.is_prerelease() && c.is_prerelease() && Version::same_base(c, v));
    case Operator::greater:
      if (!(c > v)) return false;
      // >3.1 does not match 3.1.post1 (unless the bound is a post-release) nor 3.1+local.
      if (!v.is_postrelease() && c.is_postrelease() && Version::same_base(c, v)) return false;
      return !(c.has_local() && Version::same_base(c, v));
    case Operator::arbitrary:
      break;
  }
  return false;
}

bool Specifier::contains(const Version& candidate, PreReleases pre) const {
  bool allow = pre == PreReleases::allow || (pre == PreReleases::unless_asked && m_allows_pre);
  if (candidate.is_prerelease() && !allow) return false;
  return matches(candidate);
}

Result<SpecifierSet> SpecifierSet::parse(std::string_view input) {
  SpecifierSet set;
  for (std::string_view clause : split(input, ',')) {
    clause = text::trim_python_space(clause);
    if (clause.empty()) continue;
    auto spec = Specifier::parse(clause);
    if (!spec) {
      return make_error(ExitCode::usage, "invalid version specifier set \"{}\": {}",
                        printable_excerpt(input), spec.error().message);
    }
    set.m_specifiers.push_back(std::move(*spec));
  }
  return set;
}

std::optional<bool> SpecifierSet::prereleases() const {
  if (m_specifiers.empty()) return std::nullopt;
  return std::any_of(m_specifiers.begin(), m_specifiers.end(),
                     [](const Specifier& s) { return s.allows_prereleases(); });
}

bool SpecifierSet::resolve(PreReleases pre) const {
  if (pre == PreReleases::allow) return true;
  if (pre == PreReleases::deny) return false;
  return prereleases().value_or(false);
}

bool SpecifierSet::contains(const Version& candidate, PreReleases pre) const {
  bool allow = resolve(pre);
  if (!allow && candidate.is_prerelease()) return false;
  PreReleases each = allow ? PreReleases::allow : PreReleases::deny;
  return std::all_of(m_specifiers.begin(), m_specifiers.end(),
                     [&](const Specifier& s) { return s.contains(candidate, each); });
}

std::vector<Version> SpecifierSet::filter(std::span<const Version> versions,
                                          PreReleases pre) const {
  std::vector<Version> out;
  if (!m_specifiers.empty()) {
    PreReleases each = resolve(pre) ? PreReleases::allow : PreReleases::deny;
    for (const Version& v : versions) {
      if (contains(v, each)) out.push_back(v);
    }
    return out;
  }
  std::vector<Version> pres;
  for (const Version& v : versions) {
    if (v.is_prerelease() && pre != PreReleases::allow) {
      pres.push_back(v);
    } else {
      out.push_back(v);
    }
  }
  if (out.empty() && pre == PreReleases::unless_asked) return pres;
  return out;
}

std::string SpecifierSet::to_string() const {
  std::vector<std::string> parts;
  parts.reserve(m_specifiers.size());
  for (const Specifier& s : m_specifiers) parts.push_back(s.to_string());
  std::sort(parts.begin(), parts.end());
  parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
  return join(parts, ",");
}

}  // namespace venvfix::pep
