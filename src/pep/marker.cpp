#include "venvfix/pep/marker.hpp"

#include <array>

#include "pep/text.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/pep/name.hpp"

namespace venvfix::pep {

namespace {

struct VariableSpelling {
  std::string_view text;
  Marker::Variable variable;
};

// PEP 508 names first (they are what to_string writes), then the PEP 345 and setuptools
// aliases packaging still accepts.
constexpr std::array<VariableSpelling, 18> k_variables = {{
    {"python_version", Marker::Variable::python_version},
    {"python_full_version", Marker::Variable::python_full_version},
    {"os_name", Marker::Variable::os_name},
    {"sys_platform", Marker::Variable::sys_platform},
    {"platform_release", Marker::Variable::platform_release},
    {"platform_system", Marker::Variable::platform_system},
    {"platform_machine", Marker::Variable::platform_machine},
    {"platform_python_implementation", Marker::Variable::platform_python_implementation},
    {"implementation_name", Marker::Variable::implementation_name},
    {"implementation_version", Marker::Variable::implementation_version},
    {"platform_version", Marker::Variable::platform_version},
    {"extra", Marker::Variable::extra},
    {"os.name", Marker::Variable::os_name},
    {"sys.platform", Marker::Variable::sys_platform},
    {"platform.version", Marker::Variable::platform_version},
    {"platform.machine", Marker::Variable::platform_machine},
    {"platform.python_implementation", Marker::Variable::platform_python_implementation},
    {"python_implementation", Marker::Variable::platform_python_implementation},
}};

bool is_identifier_char(char c) {
  return text::is_alnum(c) || c == '_' || c == '.';
}

const std::string& env_value(const MarkerEnvironment& env, Marker::Variable v,
                             const std::string& extra) {
  switch (v) {
    case Marker::Variable::python_version:
      return env.python_version;
    case Marker::Variable::python_full_version:
      return env.python_full_version;
    case Marker::Variable::os_name:
      return env.os_name;
    case Marker::Variable::sys_platform:
      return env.sys_platform;
    case Marker::Variable::platform_release:
      return env.platform_release;
    case Marker::Variable::platform_system:
      return env.platform_system;
    case Marker::Variable::platform_machine:
      return env.platform_machine;
    case Marker::Variable::platform_python_implementation:
      return env.platform_python_implementation;
    case Marker::Variable::implementation_name:
      return env.implementation_name;
    case Marker::Variable::implementation_version:
      return env.implementation_version;
    case Marker::Variable::platform_version:
      return env.platform_version;
    case Marker::Variable::extra:
      return extra;
  }
  return extra;
}

std::string quote(std::string_view value) {
  char q = value.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out;
  out.reserve(value.size() + 2);
  out.push_back(q);
  out += value;
  out.push_back(q);
  return out;
}

bool compare_strings(std::string_view l, Marker::Op op, std::string_view r) {
  // std::string_view compares bytes as unsigned char: code-point order for UTF-8, as Python.
  int c = l.compare(r);
  switch (op) {
    case Marker::Op::equal:
      return c == 0;
    case Marker::Op::not_equal:
      return c != 0;
    case Marker::Op::less:
      return c < 0;
    case Marker::Op::less_equal:
      return c <= 0;
    case Marker::Op::greater:
      return c > 0;
    case Marker::Op::greater_equal:
      return c >= 0;
    default:
      return false;
  }
}

}  // namespace

std::string_view variable_name(Marker::Variable variable) {
  for (const auto& spelling : k_variables) {
    if (spelling.variable == variable) return spelling.text;
  }
  return "";
}

std::string_view op_text(Marker::Op op) {
  switch (op) {
    case Marker::Op::equal:
      return "==";
    case Marker::Op::not_equal:
      return "!=";
    case Marker::Op::less:
      return "<";
    case Marker::Op::less_equal:
      return "<=";
    case Marker::Op::greater:
      return ">";
    case Marker::Op::greater_equal:
      return ">=";
    case Marker::Op::compatible:
      return "~=";
    case Marker::Op::arbitrary:
      return "===";
    case Marker::Op::in:
      return "in";
    case Marker::Op::not_in:
      return "not in";
  }
  return "";
}

// Recursive descent over packaging's grammar:
//   expr := atom (("and" | "or") atom)*
//   atom := "(" expr ")" | operand op operand
// Depth is bounded by Marker::k_max_depth, so recursion cannot exhaust the stack.
class MarkerParser {
 public:
  explicit MarkerParser(std::string_view input) : m_input(input) {}

  Result<Marker> run() {
    m_marker.m_groups.emplace_back();
    VENVFIX_TRY(parse_expr(0, 0));
    skip_space();
    if (m_pos != m_input.size()) return fail("expected \"and\", \"or\" or the end");
    return std::move(m_marker);
  }

 private:
  Error fail(std::string_view what) const {
    std::string found = m_pos < m_input.size()
                            ? fmt::format("'{}'", printable_excerpt(m_input.substr(m_pos, 8)))
                            : std::string("the end");
    return make_error(ExitCode::usage, "invalid marker \"{}\": {} at position {}, found {}",
                      printable_excerpt(m_input), what, m_pos, found);
  }

  void skip_space() {
    while (m_pos < m_input.size() && text::is_python_space(m_input[m_pos])) ++m_pos;
  }

  // A keyword at m_pos not followed by an identifier character.
  bool keyword(std::string_view word) const {
    if (m_input.substr(m_pos, word.size()) != word) return false;
    std::size_t after = m_pos + word.size();
    return after >= m_input.size() || !is_identifier_char(m_input[after]);
  }

  Status parse_expr(std::uint32_t group, int depth) {
    for (;;) {
      VENVFIX_TRY(parse_atom(group, depth));
      skip_space();
      Marker::Connective connective;
      if (keyword("and")) {
        connective = Marker::Connective::and_;
        m_pos += 3;
      } else if (keyword("or")) {
        connective = Marker::Connective::or_;
        m_pos += 2;
      } else {
        return ok();
      }
      m_marker.m_groups[group].emplace_back(connective);
    }
  }

  Status parse_atom(std::uint32_t group, int depth) {
    skip_space();
    if (m_pos < m_input.size() && m_input[m_pos] == '(') {
      if (depth + 1 > Marker::k_max_depth) {
        return fail(fmt::format("parentheses nested deeper than {} levels", Marker::k_max_depth));
      }
      ++m_pos;
      auto inner = static_cast<std::uint32_t>(m_marker.m_groups.size());
      m_marker.m_groups.emplace_back();
      m_marker.m_groups[group].emplace_back(Marker::GroupRef{inner});
      VENVFIX_TRY(parse_expr(inner, depth + 1));
      skip_space();
      if (m_pos >= m_input.size() || m_input[m_pos] != ')') return fail("expected ')'");
      ++m_pos;
      return ok();
    }
    Marker::Comparison comparison;
    VENVFIX_TRY_ASSIGN(comparison.lhs, parse_operand());
    VENVFIX_TRY_ASSIGN(comparison.op, parse_op());
    VENVFIX_TRY_ASSIGN(comparison.rhs, parse_operand());
    if (!comparison.rhs.is_variable && comparison.op != Marker::Op::in &&
        comparison.op != Marker::Op::not_in) {
      auto spec = Specifier::parse(std::string(op_text(comparison.op)) + comparison.rhs.value);
      if (spec) comparison.rhs_specifier = std::move(*spec);
    }
    m_marker.m_groups[group].emplace_back(std::move(comparison));
    return ok();
  }

  Result<Marker::Operand> parse_operand() {
    skip_space();
    Marker::Operand operand;
    if (m_pos >= m_input.size()) return fail("expected a marker variable or a quoted string");
    char c = m_input[m_pos];
    if (c == '"' || c == '\'') {
      std::size_t close = m_input.find(c, m_pos + 1);
      if (close == std::string_view::npos) return fail("unterminated string");
      operand.value = std::string(m_input.substr(m_pos + 1, close - m_pos - 1));
      m_pos = close + 1;
      return operand;
    }
    std::size_t end = m_pos;
    while (end < m_input.size() && is_identifier_char(m_input[end])) ++end;
    std::string_view word = m_input.substr(m_pos, end - m_pos);
    for (const auto& spelling : k_variables) {
      if (spelling.text == word) {
        operand.is_variable = true;
        operand.variable = spelling.variable;
        m_pos = end;
        return operand;
      }
    }
    if (word.empty()) return fail("expected a marker variable or a quoted string");
    return fail("unknown marker variable");
  }

  Result<Marker::Op> parse_op() {
    skip_space();
    static constexpr std::pair<std::string_view, Marker::Op> k_symbols[] = {
        {"===", Marker::Op::arbitrary},    {"==", Marker::Op::equal},
        {"!=", Marker::Op::not_equal},     {"<=", Marker::Op::less_equal},
        {">=", Marker::Op::greater_equal}, {"~=", Marker::Op::compatible},
        {"<", Marker::Op::less},           {">", Marker::Op::greater},
    };
    for (const auto& [symbol, op] : k_symbols) {
      if (m_input.substr(m_pos, symbol.size()) == symbol) {
        m_pos += symbol.size();
        return op;
      }
    }
    if (keyword("in")) {
      m_pos += 2;
      return Marker::Op::in;
    }
    if (keyword("not")) {
      std::size_t save = m_pos;
      m_pos += 3;
      std::size_t before_space = m_pos;
      skip_space();
      if (m_pos > before_space && keyword("in")) {
        m_pos += 2;
        return Marker::Op::not_in;
      }
      m_pos = save;
    }
    return fail("expected a comparison operator (==, !=, <, <=, >, >=, ~=, ===, in, not in)");
  }

  std::string_view m_input;
  std::size_t m_pos = 0;
  Marker m_marker;
};

Result<Marker> Marker::parse(std::string_view text) {
  return MarkerParser(text).run();
}

namespace {

bool evaluate_comparison(const Marker::Comparison& c, const MarkerEnvironment& env,
                         const std::string& extra) {
  const std::string& l_raw =
      c.lhs.is_variable ? env_value(env, c.lhs.variable, extra) : c.lhs.value;
  const std::string& r_raw =
      c.rhs.is_variable ? env_value(env, c.rhs.variable, extra) : c.rhs.value;
  const bool is_extra = (c.lhs.is_variable && c.lhs.variable == Marker::Variable::extra) ||
                        (c.rhs.is_variable && c.rhs.variable == Marker::Variable::extra);
  std::string l_norm;
  std::string r_norm;
  std::string_view l = l_raw;
  std::string_view r = r_raw;
  if (is_extra) {
    // PEP 685: extras compare as normalised names.
    l_norm = normalize_name(l_raw);
    r_norm = normalize_name(r_raw);
    l = l_norm;
    r = r_norm;
  }
  if (c.op == Marker::Op::in) return r.find(l) != std::string_view::npos;
  if (c.op == Marker::Op::not_in) return r.find(l) == std::string_view::npos;
  // Extras are names, never versions: they compare as strings.
  if (is_extra) return compare_strings(l, c.op, r);

  // A literal right side was tried as `<op><literal>` once, at parse time.
  std::optional<Specifier> dynamic;
  const Specifier* spec = c.rhs_specifier ? &*c.rhs_specifier : nullptr;
  if (c.rhs.is_variable) {
    auto parsed = Specifier::parse(std::string(op_text(c.op)) + std::string(r));
    if (parsed) {
      dynamic = std::move(*parsed);
      spec = &*dynamic;
    }
  }
  if (spec != nullptr) {
    if (auto version = Version::try_parse(l)) return spec->contains(*version, PreReleases::allow);
    if (c.op == Marker::Op::arbitrary) {
      return to_lower_ascii(l) == to_lower_ascii(spec->version_text());
    }
  }
  if (c.op == Marker::Op::compatible || c.op == Marker::Op::arbitrary) return false;
  return compare_strings(l, c.op, r);
}

}  // namespace

bool Marker::evaluate_group(std::uint32_t index, const MarkerEnvironment& env,
                            std::string_view extra) const {
  const std::string extra_value(extra);
  bool any = false;
  bool all = true;
  for (const Element& element : m_groups[index]) {
    if (const auto* connective = std::get_if<Connective>(&element)) {
      if (*connective == Connective::or_) {
        if (all) any = true;
        all = true;
      }
      continue;
    }
    if (!all) continue;  // this conjunction is already false
    if (const auto* comparison = std::get_if<Comparison>(&element)) {
      all = evaluate_comparison(*comparison, env, extra_value);
    } else {
      all = evaluate_group(std::get<GroupRef>(element).index, env, extra);
    }
  }
  return any || all;
}

bool Marker::evaluate(const MarkerEnvironment& env, const std::set<std::string>& extras) const {
  if (extras.empty()) return evaluate_group(0, env, "");
  for (const std::string& extra : extras) {
    if (evaluate_group(0, env, extra)) return true;
  }
  return false;
}

std::string Marker::format_group(std::uint32_t index, Parens parens) const {
  const Group& group = m_groups[index];
  // packaging writes a group holding a single comparison without parentheses. For a group
  // holding a single group it drops both pairs, which changes the meaning of `x and ((a or
  // b))`; keeping one pair is the only place venvfix's text differs.
  if (group.size() == 1 && std::holds_alternative<Comparison>(group[0])) parens = Parens::omit;
  if (group.size() == 1 && std::holds_alternative<GroupRef>(group[0])) {
    return format_group(std::get<GroupRef>(group[0]).index, parens);
  }
  std::string out;
  for (const Element& element : group) {
    if (!out.empty()) out.push_back(' ');
    if (const auto* connective = std::get_if<Connective>(&element)) {
      out += *connective == Connective::and_ ? "and" : "or";
    } else if (const auto* ref = std::get_if<GroupRef>(&element)) {
      out += format_group(ref->index, Parens::wrap);
    } else {
      const auto& c = std::get<Comparison>(element);
      auto operand = [](const Operand& o) {
        return o.is_variable ? std::string(variable_name(o.variable)) : quote(o.value);
      };
      out += operand(c.lhs);
      out.push_back(' ');
      out += op_text(c.op);
      out.push_back(' ');
      out += operand(c.rhs);
    }
  }
  return parens == Parens::omit ? out : "(" + out + ")";
}

std::string Marker::to_string() const {
  return format_group(0, Parens::omit);
}

MarkerEnvironment marker_environment_for(const TargetPython& target) {
  MarkerEnvironment env;
  env.python_version = std::to_string(target.major) + "." + std::to_string(target.minor);
  env.python_full_version =
      target.full_version.empty() ? env.python_version + ".0" : target.full_version;
  env.os_name = "posix";
  env.sys_platform = "linux";
  env.platform_system = "Linux";
  env.platform_machine = target.arch;
  if (target.implementation == "pp") {
    env.platform_python_implementation = "PyPy";
    env.implementation_name = "pypy";
  } else {
    env.platform_python_implementation = "CPython";
    env.implementation_name = "cpython";
    env.implementation_version = env.python_full_version;
  }
  return env;
}

}  // namespace venvfix::pep
