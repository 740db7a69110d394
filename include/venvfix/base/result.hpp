// Errors as values: Result<T> holds a T or an Error; Status is Result<void>.
//
// An Error means venvfix could not do something. It carries the exit code of the contract
// (docs/cli.md, "Exit codes") and one sentence that names the file,
// package or URL involved. A *finding* (something wrong with a venv) is not an Error: it is
// data collected for the report.
#pragma once

#include <cassert>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace venvfix {

enum class ExitCode : int {
  ok = 0,
  error = 1,          // an error not listed below
  usage = 2,          // bad usage or bad input
  problems = 3,       // doctor/plan: problems found, actions needed
  network = 4,        // network, index or download failure; venv unchanged
  verify_failed = 5,  // verification failed; transaction rolled back
  locked = 6,         // venv locked, or an unfinished transaction needs `recover`
  plan_stale = 7,     // the plan no longer matches the venv
};

struct Error {
  ExitCode code = ExitCode::error;
  std::string message;
};

// Builds an Error with a fmt-formatted message.
template <typename... Args>
Error make_error(ExitCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Error{code, fmt::format(format, std::forward<Args>(args)...)};
}

// Prefixes an error's message with context, keeping its exit code.
inline Error with_context(Error error, std::string_view context) {
  error.message = fmt::format("{}: {}", context, error.message);
  return error;
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : m_state(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit
  Result(Error error) : m_state(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit

  bool has_value() const { return m_state.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(m_state);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(m_state);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(m_state));
  }
  T value_or(T fallback) const& { return has_value() ? std::get<0>(m_state) : std::move(fallback); }

  const Error& error() const& {
    assert(!has_value());
    return std::get<1>(m_state);
  }
  Error&& error() && {
    assert(!has_value());
    return std::get<1>(std::move(m_state));
  }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> m_state;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : m_error(std::move(error)), m_failed(true) {}  // NOLINT: implicit

  bool has_value() const { return !m_failed; }
  explicit operator bool() const { return has_value(); }
  const Error& error() const& {
    assert(m_failed);
    return m_error;
  }
  Error&& error() && {
    assert(m_failed);
    return std::move(m_error);
  }

 private:
  Error m_error;
  bool m_failed = false;
};

using Status = Result<void>;

inline Status ok() {
  return {};
}

}  // namespace venvfix

#define VENVFIX_CONCAT_INNER(a, b) a##b
#define VENVFIX_CONCAT(a, b) VENVFIX_CONCAT_INNER(a, b)

// Returns the error of `expr` (a Result or Status) from the enclosing function.
#define VENVFIX_TRY(expr)                                                    \
  do {                                                                       \
    auto&& venvfix_try_result_ = (expr);                                     \
    if (!venvfix_try_result_) return std::move(venvfix_try_result_).error(); \
  } while (false)

// `VENVFIX_TRY_ASSIGN(auto x, f());` declares x from f()'s value or returns its error.
#define VENVFIX_TRY_ASSIGN(decl, expr) \
  VENVFIX_TRY_ASSIGN_IMPL(VENVFIX_CONCAT(venvfix_try_tmp_, __LINE__), decl, expr)
// NOLINTBEGIN(bugprone-macro-parentheses): `decl` is a declaration and `tmp` a name.
#define VENVFIX_TRY_ASSIGN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                             \
  if (!tmp) return std::move(tmp).error();       \
  decl = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
