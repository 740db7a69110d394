// Reading the fields of a JSON object that venvfix itself wrote or ships (plan documents,
// manifests, journals), with errors that say which document, which object and which key.
//
// Every read checks the type; none throws (nlohmann's at()/get() would). An error is one
// sentence: "<context>: '<key>' is missing" / "… must be a string", with the exit code the
// caller chose (a bad plan file is a usage error, a bad manifest or journal is not).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "venvfix/base/result.hpp"

namespace venvfix {

enum class Presence { required, optional };

class JsonFields {
 public:
  // `context` names the object ("plan.json is not a valid plan: action 2"); the reader keeps
  // a reference to `object`, which must outlive it.
  JsonFields(const nlohmann::json& object, std::string context, ExitCode code)
      : m_object(object), m_context(std::move(context)), m_code(code) {}

  const std::string& context() const { return m_context; }
  // Whether the key is present and not null.
  bool has(std::string_view key) const;

  // A string; an optional one that is absent or null reads as "".
  Result<std::string> string(std::string_view key, Presence presence = Presence::required) const;
  // An array of strings; absent reads as empty.
  Result<std::vector<std::string>> strings(std::string_view key) const;
  // An array (absent and optional: an empty one).
  Result<const nlohmann::json*> array(std::string_view key,
                                      Presence presence = Presence::required) const;
  // An object, or nullptr when absent or null and optional.
  Result<const nlohmann::json*> object(std::string_view key,
                                       Presence presence = Presence::required) const;
  // A non-negative integer, or nullopt when absent and optional.
  Result<std::optional<std::uint64_t>> count(std::string_view key,
                                             Presence presence = Presence::required) const;
  // An integer (possibly negative), or nullopt when absent and optional.
  Result<std::optional<std::int64_t>> integer(std::string_view key,
                                              Presence presence = Presence::required) const;
  // A boolean, or `fallback` when absent and optional.
  Result<bool> boolean(std::string_view key, Presence presence = Presence::required,
                       bool fallback = false) const;

  // "<context>: <message>" with the reader's exit code.
  template <typename... Args>
  Error fail(fmt::format_string<Args...> format, Args&&... args) const {
    return Error{
        m_code, fmt::format("{}: {}", m_context, fmt::format(format, std::forward<Args>(args)...))};
  }

 private:
  // The value at `key`, nullptr when absent or null.
  const nlohmann::json* find(std::string_view key) const;

  const nlohmann::json& m_object;
  std::string m_context;
  ExitCode m_code;
};

}  // namespace venvfix
