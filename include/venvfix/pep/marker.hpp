// PEP 508 environment markers: `platform_system == "Linux" and platform_machine == "x86_64"`,
// `python_version < "3.11" or extra == "cublas"`.
//
// Evaluation follows PEP 508 and packaging (>= 22): an operator compares as PEP 440 versions
// when `<op><right side>` is a valid version specifier and the left side is a valid version
// (pre-releases included, so `python_full_version >= "3.8"` holds for 3.13.0rc1); otherwise
// `in`/`not in` test substrings and the other operators compare the strings (code-point order);
// `===` compares case-insensitively. `extra` values are compared as normalised names (PEP 685),
// as strings only (an extra is a name, never a version).
// Evaluation cannot fail: where packaging raises while evaluating (`~=` or `===` whose right
// side cannot form that specifier, like `os_name ~= "posix"`), the comparison is false. Such a
// marker still parses, as it does in packaging, so one odd `Requires-Dist` line does not make
// a distribution's metadata unreadable.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/pep/specifier.hpp"
#include "venvfix/pep/tags.hpp"

namespace venvfix::pep {

struct MarkerEnvironment {
  std::string python_version;                  // "3.12"
  std::string python_full_version;             // "3.12.3"
  std::string os_name;                         // "posix"
  std::string sys_platform;                    // "linux"
  std::string platform_release;                // uname -r
  std::string platform_system;                 // "Linux"
  std::string platform_machine;                // "x86_64"
  std::string platform_python_implementation;  // "CPython"
  std::string implementation_name;             // "cpython"
  std::string implementation_version;          // "3.12.3"
  std::string platform_version;                // uname -v
};

// The environment of a CPython on Linux for `target`. platform_release and platform_version
// describe the running kernel, which `target` does not carry: they are left empty for the
// caller (the env module) to fill from uname.
MarkerEnvironment marker_environment_for(const TargetPython& target);

class Marker {
 public:
  enum class Variable : std::uint8_t {
    python_version,
    python_full_version,
    os_name,
    sys_platform,
    platform_release,
    platform_system,
    platform_machine,
    platform_python_implementation,
    implementation_name,
    implementation_version,
    platform_version,
    extra
  };
  enum class Op : std::uint8_t {
    equal,
    not_equal,
    less,
    less_equal,
    greater,
    greater_equal,
    compatible,
    arbitrary,
    in,
    not_in
  };

  // Deepest parenthesis nesting accepted; deeper input is a parse error, never a stack overflow.
  static constexpr int k_max_depth = 64;

  static Result<Marker> parse(std::string_view text);

  // With no extras the `extra` variable is "" (pip's rule for a distribution's own
  // requirements); with extras the marker holds when it holds for at least one of them, each
  // evaluated as `extra == <that extra>` (pip's iter_dependencies).
  bool evaluate(const MarkerEnvironment& env, const std::set<std::string>& extras = {}) const;

  // packaging's str(Marker): variables by their PEP 508 name, values double-quoted (single
  // quotes when the value holds a double quote), single spaces, parentheses around a single
  // comparison and around the whole marker dropped. Parsing the result gives the same marker.
  std::string to_string() const;

  // One side of a comparison: a variable or a literal string.
  struct Operand {
    bool is_variable = false;
    Variable variable = Variable::python_version;
    std::string value;
  };
  struct Comparison {
    Operand lhs;
    Op op = Op::equal;
    Operand rhs;
    // `<op><rhs>` parsed once when the right side is a literal that forms a specifier.
    std::optional<Specifier> rhs_specifier;
  };
  // packaging's parse shape: a group is a flat list of comparisons, nested groups and
  // and/or connectives, evaluated with `and` binding tighter than `or`.
  enum class Connective : std::uint8_t { and_, or_ };
  struct GroupRef {
    std::uint32_t index;
  };
  using Element = std::variant<Comparison, GroupRef, Connective>;
  using Group = std::vector<Element>;

 private:
  friend class MarkerParser;
  bool evaluate_group(std::uint32_t index, const MarkerEnvironment& env,
                      std::string_view extra) const;
  // omit: the outermost group, or one holding a single comparison, is written bare.
  enum class Parens { omit, wrap };
  std::string format_group(std::uint32_t index, Parens parens) const;

  std::vector<Group> m_groups;  // m_groups[0] is the whole marker
};

std::string_view variable_name(Marker::Variable variable);
std::string_view op_text(Marker::Op op);

}  // namespace venvfix::pep
