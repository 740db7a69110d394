#include "venvfix/pep/version.hpp"

#include <climits>

#include "pep/text.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::pep {

using text::is_alnum;
using text::is_digit;

namespace {

bool is_separator(char c) {
  return c == '-' || c == '_' || c == '.';
}

// Exact value of a run of ASCII digits.
VersionNumber make_number(std::string_view digits) {
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  VersionNumber n;
  constexpr std::string_view k_max = "18446744073709551615";
  if (digits.size() > k_max.size() || (digits.size() == k_max.size() && digits > k_max)) {
    n.value = UINT64_MAX;
    n.big = std::string(digits);
    return n;
  }
  for (char c : digits) n.value = n.value * 10 + static_cast<std::uint64_t>(c - '0');
  return n;
}

std::strong_ordering compare_numbers(std::uint64_t a, std::string_view a_big, std::uint64_t b,
                                     std::string_view b_big) {
  if (a_big.empty() && b_big.empty()) return a <=> b;
  if (a_big.empty()) return std::strong_ordering::less;
  if (b_big.empty()) return std::strong_ordering::greater;
  if (a_big.size() != b_big.size()) return a_big.size() <=> b_big.size();
  return a_big.compare(b_big) <=> 0;
}

bool is_all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!is_digit(c)) return false;
  }
  return true;
}

// packaging's local order: numeric parts compare numerically and sort after alphanumeric
// parts, alphanumeric parts compare as strings, a shorter label sorts first on a tie.
std::strong_ordering compare_local(std::string_view a, std::string_view b) {
  if (a.empty() || b.empty()) return !a.empty() <=> !b.empty();
  for (;;) {
    std::size_t a_end = a.find('.');
    std::size_t b_end = b.find('.');
    std::string_view pa = a.substr(0, a_end);
    std::string_view pb = b.substr(0, b_end);
    bool na = is_all_digits(pa);
    bool nb = is_all_digits(pb);
    std::strong_ordering order = std::strong_ordering::equal;
    if (na != nb) {
      order = na <=> nb;
    } else if (na) {
      // Normalised: no leading zeros, so longer means larger.
      order = pa.size() != pb.size() ? pa.size() <=> pb.size() : pa.compare(pb) <=> 0;
    } else {
      order = pa.compare(pb) <=> 0;
    }
    if (order != 0) return order;
    bool a_more = a_end != std::string_view::npos;
    bool b_more = b_end != std::string_view::npos;
    if (!a_more || !b_more) return a_more <=> b_more;
    a.remove_prefix(a_end + 1);
    b.remove_prefix(b_end + 1);
  }
}

const char* pre_label(Version::PreKind kind) {
  switch (kind) {
    case Version::PreKind::alpha:
      return "a";
    case Version::PreKind::beta:
      return "b";
    case Version::PreKind::rc:
      return "rc";
    case Version::PreKind::none:
      break;
  }
  return "";
}

}  // namespace

std::strong_ordering operator<=>(const VersionNumber& a, const VersionNumber& b) {
  return compare_numbers(a.value, a.big, b.value, b.big);
}

std::string VersionNumber::to_string() const {
  return big.empty() ? std::to_string(value) : big;
}

// A hand-written matcher equivalent to packaging's VERSION_PATTERN (anchored, IGNORECASE),
// including where its optional separators may go. Where the regex could backtrack, the
// choices made here (longest label, a separator after a label consumed) reach the same result.
class VersionParser {
 public:
  explicit VersionParser(std::string_view input) : m_input(input) {}

  Result<Version> run() {
    std::string_view trimmed = text::trim_python_space(m_input);
    m_pos = static_cast<std::size_t>(trimmed.data() - m_input.data());
    m_end = m_pos + trimmed.size();
    if (trimmed.empty()) return fail("the version is empty");

    if (m_pos < m_end && (at() == 'v' || at() == 'V')) ++m_pos;
    std::string_view first = digits();
    if (first.empty()) return fail("expected a digit");
    if (m_pos < m_end && at() == '!') {
      m_version.m_epoch = make_number(first);
      ++m_pos;
      first = digits();
      if (first.empty()) return fail("expected a digit after the epoch");
    }
    add_release(first);
    while (m_pos + 1 < m_end && at() == '.' && is_digit(m_input[m_pos + 1])) {
      ++m_pos;
      add_release(digits());
    }
    parse_pre();
    parse_post();
    parse_dev();
    if (m_pos < m_end && at() == '+') {
      ++m_pos;
      if (!parse_local()) return fail("expected a letter or digit in the local label");
    }
    if (m_pos != m_end) return fail("unexpected character");
    build_text();
    return std::move(m_version);
  }

 private:
  char at() const { return m_input[m_pos]; }
  bool sep_at(std::size_t p) const { return p < m_end && is_separator(m_input[p]); }
  bool digit_at(std::size_t p) const { return p < m_end && is_digit(m_input[p]); }

  Error fail(std::string_view what) const {
    std::string found = m_pos < m_end
                            ? fmt::format(" '{}'", printable_excerpt(m_input.substr(m_pos, 1)))
                            : std::string(" end of text");
    if (what == "the version is empty") {
      return make_error(ExitCode::usage, "invalid version \"{}\": the version is empty",
                        printable_excerpt(m_input));
    }
    return make_error(ExitCode::usage, "invalid version \"{}\": {} at position {} (found{})",
                      printable_excerpt(m_input), what, m_pos, found);
  }

  std::string_view digits() {
    std::size_t start = m_pos;
    while (m_pos < m_end && is_digit(at())) ++m_pos;
    return m_input.substr(start, m_pos - start);
  }

  void add_release(std::string_view d) {
    VersionNumber n = make_number(d);
    if (!n.big.empty() && m_version.m_release_big.empty()) {
      m_version.m_release_big.resize(m_version.m_release.size());
    }
    m_version.m_release.push_back(n.value);
    if (!m_version.m_release_big.empty() || !n.big.empty()) {
      m_version.m_release_big.push_back(std::move(n.big));
    }
  }

  // Matches one of `labels` (lowercase, longest first) at `p`; returns its length or 0.
  std::size_t match_label(std::size_t p, std::initializer_list<std::string_view> labels,
                          std::size_t* which) const {
    std::size_t i = 0;
    for (std::string_view label : labels) {
      if (p <= m_end && m_end - p >= label.size() && text::starts_with_word(m_input, p, label)) {
        *which = i;
        return label.size();
      }
      ++i;
    }
    return 0;
  }

  // The number after a label: `[-_.]?[0-9]*`; a separator not followed by a digit is still
  // consumed, as the regex allows (`1.0a.` is `1.0a0`).
  VersionNumber label_number() {
    if (sep_at(m_pos) && digit_at(m_pos + 1)) ++m_pos;
    if (digit_at(m_pos)) return make_number(digits());
    if (sep_at(m_pos)) ++m_pos;
    return VersionNumber{};
  }

  void parse_pre() {
    std::size_t p = sep_at(m_pos) ? m_pos + 1 : m_pos;
    std::size_t which = 0;
    std::size_t len =
        match_label(p, {"preview", "alpha", "beta", "pre", "rc", "a", "b", "c"}, &which);
    if (len == 0) return;
    static constexpr Version::PreKind kinds[] = {Version::PreKind::rc,   Version::PreKind::alpha,
                                                 Version::PreKind::beta, Version::PreKind::rc,
                                                 Version::PreKind::rc,   Version::PreKind::alpha,
                                                 Version::PreKind::beta, Version::PreKind::rc};
    m_pos = p + len;
    m_version.m_pre_kind = kinds[which];
    m_version.m_pre = label_number();
  }

  void parse_post() {
    if (m_pos < m_end && at() == '-' && digit_at(m_pos + 1)) {
      ++m_pos;
      m_version.m_has_post = true;
      m_version.m_post = make_number(digits());
      return;
    }
    std::size_t p = sep_at(m_pos) ? m_pos + 1 : m_pos;
    std::size_t which = 0;
    std::size_t len = match_label(p, {"post", "rev", "r"}, &which);
    if (len == 0) return;
    m_pos = p + len;
    m_version.m_has_post = true;
    m_version.m_post = label_number();
  }

  void parse_dev() {
    std::size_t p = sep_at(m_pos) ? m_pos + 1 : m_pos;
    std::size_t which = 0;
    if (match_label(p, {"dev"}, &which) == 0) return;
    m_pos = p + 3;
    m_version.m_has_dev = true;
    m_version.m_dev = label_number();
  }

  // `[a-z0-9]+([-_.][a-z0-9]+)*`, normalised: lowercase, `.` separators, numeric parts
  // without leading zeros (packaging turns them into ints).
  bool parse_local() {
    std::string& out = m_version.m_local;
    for (;;) {
      std::size_t start = m_pos;
      while (m_pos < m_end && is_alnum(at())) ++m_pos;
      if (m_pos == start) return false;
      std::string_view part = m_input.substr(start, m_pos - start);
      if (!out.empty()) out.push_back('.');
      if (is_all_digits(part)) {
        while (part.size() > 1 && part.front() == '0') part.remove_prefix(1);
        out += part;
      } else {
        for (char c : part) out.push_back(text::lower(c));
      }
      if (!(sep_at(m_pos) && m_pos + 1 < m_end && is_alnum(m_input[m_pos + 1]))) return true;
      ++m_pos;
    }
  }

  void build_text() {
    Version& v = m_version;
    std::string& t = v.m_text;
    if (v.m_epoch.value != 0 || !v.m_epoch.big.empty()) {
      t += v.m_epoch.to_string();
      t += '!';
    }
    for (std::size_t i = 0; i < v.m_release.size(); ++i) {
      if (i > 0) t += '.';
      if (!v.m_release_big.empty() && !v.m_release_big[i].empty()) {
        t += v.m_release_big[i];
      } else {
        t += std::to_string(v.m_release[i]);
      }
    }
    if (v.m_pre_kind != Version::PreKind::none) {
      t += pre_label(v.m_pre_kind);
      t += v.m_pre.to_string();
    }
    if (v.m_has_post) t += ".post" + v.m_post.to_string();
    if (v.m_has_dev) t += ".dev" + v.m_dev.to_string();
    if (!v.m_local.empty()) t += "+" + v.m_local;
  }

  std::string_view m_input;
  std::size_t m_pos = 0;
  std::size_t m_end = 0;
  Version m_version;
};

Result<Version> Version::parse(std::string_view text) {
  return VersionParser(text).run();
}

std::string Version::public_version() const {
  return m_local.empty() ? m_text : m_text.substr(0, m_text.size() - m_local.size() - 1);
}

std::string Version::base_version() const {
  std::string out;
  if (m_epoch.value != 0 || !m_epoch.big.empty()) out = m_epoch.to_string() + "!";
  for (std::size_t i = 0; i < m_release.size(); ++i) {
    if (i > 0) out += '.';
    out += (!m_release_big.empty() && !m_release_big[i].empty()) ? m_release_big[i]
                                                                 : std::to_string(m_release[i]);
  }
  return out;
}

int Version::epoch() const {
  return m_epoch.value > static_cast<std::uint64_t>(INT_MAX) ? INT_MAX
                                                             : static_cast<int>(m_epoch.value);
}

std::optional<std::uint64_t> Version::pre_number() const {
  if (m_pre_kind == PreKind::none) return std::nullopt;
  return m_pre.value;
}
std::optional<std::uint64_t> Version::post() const {
  if (!m_has_post) return std::nullopt;
  return m_post.value;
}
std::optional<std::uint64_t> Version::dev() const {
  if (!m_has_dev) return std::nullopt;
  return m_dev.value;
}

namespace {

std::strong_ordering compare_release(const Version& a, const Version& b,
                                     const std::vector<std::string>& a_big,
                                     const std::vector<std::string>& b_big) {
  auto ra = a.release();
  auto rb = b.release();
  std::size_t n = std::max(ra.size(), rb.size());
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t va = i < ra.size() ? ra[i] : 0;
    std::uint64_t vb = i < rb.size() ? rb[i] : 0;
    std::string_view ba = (i < a_big.size()) ? std::string_view(a_big[i]) : std::string_view();
    std::string_view bb = (i < b_big.size()) ? std::string_view(b_big[i]) : std::string_view();
    auto order = compare_numbers(va, ba, vb, bb);
    if (order != 0) return order;
  }
  return std::strong_ordering::equal;
}

}  // namespace

bool Version::same_base(const Version& a, const Version& b) {
  return a.m_epoch == b.m_epoch && compare_release(a, b, a.m_release_big, b.m_release_big) == 0;
}

std::strong_ordering Version::compare_public(const Version& a, const Version& b) {
  if (auto o = a.m_epoch <=> b.m_epoch; o != 0) return o;
  if (auto o = compare_release(a, b, a.m_release_big, b.m_release_big); o != 0) return o;
  // Pre: a dev release with neither pre nor post sorts before any pre-release (-inf); no
  // pre-release sorts after every pre-release (+inf).
  auto pre_rank = [](const Version& v) {
    if (v.m_pre_kind != PreKind::none) return 1;
    return (!v.m_has_post && v.m_has_dev) ? 0 : 2;
  };
  int ra = pre_rank(a);
  int rb = pre_rank(b);
  if (ra != rb) return ra <=> rb;
  if (ra == 1) {
    if (a.m_pre_kind != b.m_pre_kind) return a.m_pre_kind <=> b.m_pre_kind;
    if (auto o = a.m_pre <=> b.m_pre; o != 0) return o;
  }
  if (a.m_has_post != b.m_has_post) return a.m_has_post <=> b.m_has_post;
  if (a.m_has_post) {
    if (auto o = a.m_post <=> b.m_post; o != 0) return o;
  }
  if (a.m_has_dev != b.m_has_dev) return b.m_has_dev <=> a.m_has_dev;  // no dev is +inf
  if (a.m_has_dev) {
    if (auto o = a.m_dev <=> b.m_dev; o != 0) return o;
  }
  return std::strong_ordering::equal;
}

std::strong_ordering operator<=>(const Version& a, const Version& b) {
  if (auto o = Version::compare_public(a, b); o != 0) return o;
  return compare_local(a.m_local, b.m_local);
}

std::vector<std::string> Version::prefix_parts() const {
  std::vector<std::string> parts;
  parts.reserve(m_release.size() + 4);
  parts.push_back(m_epoch.to_string());
  for (std::size_t i = 0; i < m_release.size(); ++i) {
    parts.push_back((!m_release_big.empty() && !m_release_big[i].empty())
                        ? m_release_big[i]
                        : std::to_string(m_release[i]));
  }
  if (m_pre_kind != PreKind::none) parts.push_back(pre_label(m_pre_kind) + m_pre.to_string());
  if (m_has_post) parts.push_back("post" + m_post.to_string());
  if (m_has_dev) parts.push_back("dev" + m_dev.to_string());
  return parts;
}

}  // namespace venvfix::pep
