#include "venvfix/plan/document.hpp"

#include <algorithm>

namespace venvfix::plan {

using nlohmann::ordered_json;

std::string_view to_string(ActionKind kind) {
  return kind == ActionKind::install ? "install" : "remove";
}

namespace {

// ordered_json keeps the contract's key order in the written document; the public API uses
// plain json (findings come from verify as nlohmann::json).
ordered_json action_json(const Action& action) {
  ordered_json out;
  out["action"] = to_string(action.kind);
  out["dist"] = action.dist;
  out["version"] = action.version;
  if (action.replaces) {
    out["replaces"] = {{"dist", action.replaces->dist}, {"version", action.replaces->version}};
  } else if (action.kind == ActionKind::install) {
    out["replaces"] = nullptr;  // the contract: present on every install, null when fresh
  }
  if (action.kind == ActionKind::install) {
    out["file"] = action.file;
    out["url"] = action.url;
    out["sha256"] = action.sha256;
    out["size"] = action.size;
    out["provides"] = action.provides;
  }
  if (!action.keep.empty()) out["keep"] = action.keep;
  out["reason"] = action.reason;
  if (!action.rule.empty()) out["rule"] = action.rule;
  return out;
}

// Sorted keys inside each finding (plain json) is deterministic already; converting keeps it.
ordered_json ordered(const nlohmann::json& value) {
  return ordered_json::parse(value.dump());
}

bool is_hex64(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

class Reader {
 public:
  explicit Reader(std::string_view source) : m_source(source) {}

  Result<std::string> string(const nlohmann::json& object, const char* key, const char* where,
                             bool required = true) const {
    auto it = object.find(key);
    if (it == object.end()) {
      if (!required) return std::string();
      return make_error(ExitCode::usage, "{} is not a valid plan: {} has no \"{}\"", m_source,
                        where, key);
    }
    if (!it->is_string()) {
      return make_error(ExitCode::usage, "{} is not a valid plan: \"{}\" of {} is not a string",
                        m_source, key, where);
    }
    return it->get<std::string>();
  }

  Result<std::vector<std::string>> strings(const nlohmann::json& object, const char* key,
                                           const char* where) const {
    std::vector<std::string> out;
    auto it = object.find(key);
    if (it == object.end()) return out;
    if (!it->is_array()) {
      return make_error(ExitCode::usage, "{} is not a valid plan: \"{}\" of {} is not a list",
                        m_source, key, where);
    }
    for (const auto& item : *it) {
      if (!item.is_string()) {
        return make_error(ExitCode::usage,
                          "{} is not a valid plan: \"{}\" of {} holds a value that is not a "
                          "string",
                          m_source, key, where);
      }
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  Result<Action> action(const nlohmann::json& value, std::size_t index) const {
    std::string where = "action " + std::to_string(index + 1);
    const char* w = where.c_str();
    if (!value.is_object()) {
      return make_error(ExitCode::usage, "{} is not a valid plan: {} is not an object", m_source,
                        where);
    }
    Action action;
    VENVFIX_TRY_ASSIGN(std::string kind, string(value, "action", w));
    if (kind == "install") {
      action.kind = ActionKind::install;
    } else if (kind == "remove") {
      action.kind = ActionKind::remove;
    } else {
      return make_error(ExitCode::usage,
                        "{} is not a valid plan: {} is \"{}\", not \"install\" or \"remove\"",
                        m_source, where, kind);
    }
    VENVFIX_TRY_ASSIGN(action.dist, string(value, "dist", w));
    VENVFIX_TRY_ASSIGN(action.version, string(value, "version", w));
    if (auto it = value.find("replaces"); it != value.end() && !it->is_null()) {
      if (!it->is_object()) {
        return make_error(ExitCode::usage,
                          "{} is not a valid plan: \"replaces\" of {} is not an "
                          "object",
                          m_source, where);
      }
      DistVersion replaced;
      VENVFIX_TRY_ASSIGN(replaced.dist, string(*it, "dist", w));
      VENVFIX_TRY_ASSIGN(replaced.version, string(*it, "version", w));
      action.replaces = std::move(replaced);
    }
    bool install = action.kind == ActionKind::install;
    VENVFIX_TRY_ASSIGN(action.file, string(value, "file", w, install));
    VENVFIX_TRY_ASSIGN(action.url, string(value, "url", w, install));
    VENVFIX_TRY_ASSIGN(action.sha256, string(value, "sha256", w, install));
    if (install && !is_hex64(action.sha256)) {
      return make_error(ExitCode::usage,
                        "{} is not a valid plan: the sha256 of {} ({}) is not 64 lowercase hex "
                        "digits",
                        m_source, where, action.file);
    }
    if (auto it = value.find("size"); it != value.end()) {
      if (!it->is_number_unsigned()) {
        return make_error(ExitCode::usage,
                          "{} is not a valid plan: \"size\" of {} is not a byte count", m_source,
                          where);
      }
      action.size = it->get<std::uint64_t>();
    }
    VENVFIX_TRY_ASSIGN(action.provides, strings(value, "provides", w));
    VENVFIX_TRY_ASSIGN(action.keep, strings(value, "keep", w));
    VENVFIX_TRY_ASSIGN(action.reason, string(value, "reason", w, false));
    VENVFIX_TRY_ASSIGN(action.rule, string(value, "rule", w, false));
    return action;
  }

 private:
  std::string_view m_source;
};

}  // namespace

nlohmann::json to_json(const Plan& plan) {
  return nlohmann::json::parse(to_text(plan));
}

std::string to_text(const Plan& plan) {
  ordered_json out;
  out["schema"] = plan_schema;
  out["venv"] = plan.venv;
  out["python"] = plan.python;
  out["platform"] = plan.platform;
  out["targets"] = plan.targets;
  out["state"] = plan.state;
  out["findings"] = ordered(plan.findings.is_null() ? nlohmann::json::array() : plan.findings);
  ordered_json actions = ordered_json::array();
  for (const Action& action : plan.actions) actions.push_back(action_json(action));
  out["actions"] = std::move(actions);
  if (plan.unresolved.is_array() && !plan.unresolved.empty()) {
    out["unresolved"] = ordered(plan.unresolved);
  }
  if (plan.notes.is_array() && !plan.notes.empty()) out["notes"] = ordered(plan.notes);
  return out.dump(2) + "\n";
}

Result<Plan> parse_plan(std::string_view text, std::string_view source_name) {
  nlohmann::json document = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    return make_error(ExitCode::usage, "{} is not a plan: it is not valid JSON", source_name);
  }
  if (!document.is_object()) {
    return make_error(ExitCode::usage, "{} is not a plan: the document is not a JSON object",
                      source_name);
  }
  Reader reader(source_name);
  VENVFIX_TRY_ASSIGN(std::string schema, reader.string(document, "schema", "the document"));
  if (schema != plan_schema) {
    return make_error(ExitCode::usage,
                      "{} is not a plan venvfix can read: its schema is \"{}\", "
                      "not \"{}\"",
                      source_name, schema, plan_schema);
  }
  Plan plan;
  VENVFIX_TRY_ASSIGN(plan.venv, reader.string(document, "venv", "the document"));
  VENVFIX_TRY_ASSIGN(plan.python, reader.string(document, "python", "the document", false));
  VENVFIX_TRY_ASSIGN(plan.platform, reader.string(document, "platform", "the document", false));
  VENVFIX_TRY_ASSIGN(plan.targets, reader.strings(document, "targets", "the document"));
  VENVFIX_TRY_ASSIGN(plan.state, reader.string(document, "state", "the document"));
  if (auto it = document.find("findings"); it != document.end()) {
    if (!it->is_array()) {
      return make_error(ExitCode::usage, "{} is not a valid plan: \"findings\" is not a list",
                        source_name);
    }
    plan.findings = *it;
  }
  if (auto it = document.find("unresolved"); it != document.end()) {
    if (!it->is_array()) {
      return make_error(ExitCode::usage, "{} is not a valid plan: \"unresolved\" is not a list",
                        source_name);
    }
    plan.unresolved = *it;
  }
  if (auto it = document.find("notes"); it != document.end()) {
    if (!it->is_array()) {
      return make_error(ExitCode::usage, "{} is not a valid plan: \"notes\" is not a list",
                        source_name);
    }
    plan.notes = *it;
  }
  auto actions = document.find("actions");
  if (actions == document.end() || !actions->is_array()) {
    return make_error(ExitCode::usage,
                      "{} is not a valid plan: \"actions\" is missing or not a "
                      "list",
                      source_name);
  }
  for (std::size_t i = 0; i < actions->size(); ++i) {
    VENVFIX_TRY_ASSIGN(Action action, reader.action((*actions)[i], i));
    plan.actions.push_back(std::move(action));
  }
  return plan;
}

}  // namespace venvfix::plan
