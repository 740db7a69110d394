#include "venvfix/plan/document.hpp"

#include <algorithm>

#include "venvfix/base/json_fields.hpp"

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

// Sorted keys inside each finding (plain json) is deterministic already; converting keeps it
// (nlohmann converts between its two object layouts directly).
ordered_json ordered(const nlohmann::json& value) {
  return ordered_json(value);
}

bool is_hex64(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The fields of a plan document; a bad one is a usage error naming the file.
JsonFields fields(const nlohmann::json& object, std::string_view source, std::string_view where) {
  return JsonFields(object, fmt::format("{} is not a valid plan: {}", source, where),
                    ExitCode::usage);
}

Result<ActionKind> action_kind(const JsonFields& r) {
  VENVFIX_TRY_ASSIGN(std::string kind, r.string("action"));
  if (kind == "install") return ActionKind::install;
  if (kind == "remove") return ActionKind::remove;
  return r.fail("'action' is \"{}\", not \"install\" or \"remove\"", kind);
}

Result<std::optional<DistVersion>> replaced_of(const JsonFields& r, std::string_view source,
                                               const std::string& where) {
  VENVFIX_TRY_ASSIGN(const nlohmann::json* node, r.object("replaces", Presence::optional));
  if (node == nullptr) return std::optional<DistVersion>();
  const JsonFields replaces = fields(*node, source, where + " replaces");
  DistVersion replaced;
  VENVFIX_TRY_ASSIGN(replaced.dist, replaces.string("dist"));
  VENVFIX_TRY_ASSIGN(replaced.version, replaces.string("version"));
  return std::optional<DistVersion>(std::move(replaced));
}

Result<Action> read_action(const nlohmann::json& value, std::size_t index,
                           std::string_view source) {
  const std::string where = "action " + std::to_string(index + 1);
  if (!value.is_object()) {
    return make_error(ExitCode::usage, "{} is not a valid plan: {} is not an object", source,
                      where);
  }
  const JsonFields r = fields(value, source, where);
  Action action;
  VENVFIX_TRY_ASSIGN(action.kind, action_kind(r));
  VENVFIX_TRY_ASSIGN(action.dist, r.string("dist"));
  VENVFIX_TRY_ASSIGN(action.version, r.string("version"));
  VENVFIX_TRY_ASSIGN(action.replaces, replaced_of(r, source, where));
  const Presence for_install =
      action.kind == ActionKind::install ? Presence::required : Presence::optional;
  VENVFIX_TRY_ASSIGN(action.file, r.string("file", for_install));
  VENVFIX_TRY_ASSIGN(action.url, r.string("url", for_install));
  VENVFIX_TRY_ASSIGN(action.sha256, r.string("sha256", for_install));
  if (action.kind == ActionKind::install && !is_hex64(action.sha256)) {
    return r.fail("the sha256 of {} is not 64 lowercase hex digits", action.file);
  }
  VENVFIX_TRY_ASSIGN(std::optional<std::uint64_t> size, r.count("size", Presence::optional));
  action.size = size.value_or(0);
  VENVFIX_TRY_ASSIGN(action.provides, r.strings("provides"));
  VENVFIX_TRY_ASSIGN(action.keep, r.strings("keep"));
  VENVFIX_TRY_ASSIGN(action.reason, r.string("reason", Presence::optional));
  VENVFIX_TRY_ASSIGN(action.rule, r.string("rule", Presence::optional));
  return action;
}

Result<nlohmann::json> list_of(const JsonFields& r, std::string_view key) {
  VENVFIX_TRY_ASSIGN(const nlohmann::json* list, r.array(key, Presence::optional));
  return *list;
}

}  // namespace

namespace {

ordered_json document_of(const Plan& plan) {
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
  return out;
}

}  // namespace

nlohmann::json to_json(const Plan& plan) {
  return nlohmann::json(document_of(plan));
}

std::string to_text(const Plan& plan) {
  return document_of(plan).dump(2) + "\n";
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
  const JsonFields r = fields(document, source_name, "the document");
  VENVFIX_TRY_ASSIGN(std::string schema, r.string("schema"));
  if (schema != plan_schema) {
    return make_error(ExitCode::usage,
                      "{} is not a plan venvfix can read: its schema is \"{}\", "
                      "not \"{}\"",
                      source_name, schema, plan_schema);
  }
  Plan plan;
  VENVFIX_TRY_ASSIGN(plan.venv, r.string("venv"));
  VENVFIX_TRY_ASSIGN(plan.python, r.string("python", Presence::optional));
  VENVFIX_TRY_ASSIGN(plan.platform, r.string("platform", Presence::optional));
  VENVFIX_TRY_ASSIGN(plan.targets, r.strings("targets"));
  VENVFIX_TRY_ASSIGN(plan.state, r.string("state"));
  if (r.has("findings")) {
    VENVFIX_TRY_ASSIGN(plan.findings, list_of(r, "findings"));
  }
  if (r.has("unresolved")) {
    VENVFIX_TRY_ASSIGN(plan.unresolved, list_of(r, "unresolved"));
  }
  if (r.has("notes")) {
    VENVFIX_TRY_ASSIGN(plan.notes, list_of(r, "notes"));
  }
  VENVFIX_TRY_ASSIGN(const nlohmann::json* actions, r.array("actions"));
  for (std::size_t i = 0; i < actions->size(); ++i) {
    VENVFIX_TRY_ASSIGN(Action action, read_action((*actions)[i], i, source_name));
    plan.actions.push_back(std::move(action));
  }
  return plan;
}

}  // namespace venvfix::plan
