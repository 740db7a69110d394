#include "venvfix/base/json_fields.hpp"

namespace venvfix {

const nlohmann::json* JsonFields::find(std::string_view key) const {
  if (!m_object.is_object()) return nullptr;
  auto it = m_object.find(key);
  if (it == m_object.end() || it->is_null()) return nullptr;
  return &*it;
}

bool JsonFields::has(std::string_view key) const {
  return find(key) != nullptr;
}

Result<std::string> JsonFields::string(std::string_view key, Presence presence) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) {
    if (presence == Presence::optional) return std::string();
    return fail("\"{}\" is missing", key);
  }
  if (!value->is_string()) return fail("\"{}\" must be a string", key);
  return value->get<std::string>();
}

Result<std::vector<std::string>> JsonFields::strings(std::string_view key) const {
  std::vector<std::string> out;
  const nlohmann::json* value = find(key);
  if (value == nullptr) return out;
  if (!value->is_array()) return fail("\"{}\" must be an array of strings", key);
  for (const nlohmann::json& item : *value) {
    if (!item.is_string()) return fail("\"{}\" must be an array of strings", key);
    out.push_back(item.get<std::string>());
  }
  return out;
}

Result<const nlohmann::json*> JsonFields::array(std::string_view key, Presence presence) const {
  static const nlohmann::json k_empty = nlohmann::json::array();
  const nlohmann::json* value = find(key);
  if (value == nullptr) {
    if (presence == Presence::optional) return &k_empty;
    return fail("\"{}\" is missing", key);
  }
  if (!value->is_array()) return fail("\"{}\" must be an array", key);
  return value;
}

Result<const nlohmann::json*> JsonFields::object(std::string_view key, Presence presence) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) {
    if (presence == Presence::optional) return static_cast<const nlohmann::json*>(nullptr);
    return fail("\"{}\" is missing", key);
  }
  if (!value->is_object()) return fail("\"{}\" must be an object", key);
  return value;
}

Result<std::optional<std::uint64_t>> JsonFields::count(std::string_view key,
                                                       Presence presence) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) {
    if (presence == Presence::optional) return std::optional<std::uint64_t>();
    return fail("\"{}\" is missing", key);
  }
  if (!value->is_number_unsigned()) return fail("\"{}\" must be a non-negative integer", key);
  return std::optional<std::uint64_t>(value->get<std::uint64_t>());
}

Result<std::optional<std::int64_t>> JsonFields::integer(std::string_view key,
                                                        Presence presence) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) {
    if (presence == Presence::optional) return std::optional<std::int64_t>();
    return fail("\"{}\" is missing", key);
  }
  if (!value->is_number_integer()) return fail("\"{}\" must be an integer", key);
  return std::optional<std::int64_t>(value->get<std::int64_t>());
}

Result<bool> JsonFields::boolean(std::string_view key, Presence presence, bool fallback) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) {
    if (presence == Presence::optional) return fallback;
    return fail("\"{}\" is missing", key);
  }
  if (!value->is_boolean()) return fail("\"{}\" must be true or false", key);
  return value->get<bool>();
}

}  // namespace venvfix
