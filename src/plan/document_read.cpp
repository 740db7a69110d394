// parse_plan: a plan document back into typed data; every field is checked, and an error names
// the file, the entry and the field.
#include <algorithm>

#include "venvfix/base/json_fields.hpp"
#include "venvfix/plan/document.hpp"

namespace venvfix::plan {

namespace {

bool is_hex64(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string context_of(std::string_view source, std::string_view where) {
  return fmt::format("{} is not a valid plan: {}", source, where);
}

// The fields of a plan document; a bad one is a usage error naming the file.
JsonFields fields(const nlohmann::json& object, std::string_view source, std::string_view where) {
  return JsonFields(object, context_of(source, where), ExitCode::usage);
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

Result<Action> read_install(const JsonFields& r, std::string_view source,
                            const std::string& where) {
  Install action;
  VENVFIX_TRY_ASSIGN(action.dist, r.string("dist"));
  VENVFIX_TRY_ASSIGN(action.version, r.string("version"));
  VENVFIX_TRY_ASSIGN(action.replaces, replaced_of(r, source, where));
  VENVFIX_TRY_ASSIGN(action.file, r.string("file"));
  VENVFIX_TRY_ASSIGN(action.url, r.string("url"));
  VENVFIX_TRY_ASSIGN(action.sha256, r.string("sha256"));
  if (!is_hex64(action.sha256)) {
    return r.fail("the sha256 of {} is not 64 lowercase hex digits", action.file);
  }
  VENVFIX_TRY_ASSIGN(std::optional<std::uint64_t> size, r.count("size", Presence::optional));
  action.size = size.value_or(0);
  VENVFIX_TRY_ASSIGN(action.provides, r.strings("provides"));
  VENVFIX_TRY(r.strings("keep"));  // a remove's field: ignored here, but checked as before
  VENVFIX_TRY_ASSIGN(action.reason, r.string("reason", Presence::optional));
  VENVFIX_TRY_ASSIGN(action.rule, r.string("rule", Presence::optional));
  return Action(std::move(action));
}

// An install's own fields on a remove are ignored, but a mistyped one is still refused.
Status check_install_fields(const JsonFields& r) {
  for (const char* key : {"file", "url", "sha256"}) VENVFIX_TRY(r.string(key, Presence::optional));
  VENVFIX_TRY(r.count("size", Presence::optional));
  VENVFIX_TRY(r.strings("provides"));
  return ok();
}

Result<Action> read_remove(const JsonFields& r) {
  VENVFIX_TRY(check_install_fields(r));
  Remove action;
  VENVFIX_TRY_ASSIGN(action.dist, r.string("dist"));
  VENVFIX_TRY_ASSIGN(action.version, r.string("version"));
  VENVFIX_TRY_ASSIGN(action.keep, r.strings("keep"));
  VENVFIX_TRY_ASSIGN(action.reason, r.string("reason", Presence::optional));
  VENVFIX_TRY_ASSIGN(action.rule, r.string("rule", Presence::optional));
  return Action(std::move(action));
}

Result<Action> read_action(const nlohmann::json& value, const std::string& where,
                           std::string_view source) {
  const JsonFields r = fields(value, source, where);
  VENVFIX_TRY_ASSIGN(std::string kind, r.string("action"));
  if (kind == "install") return read_install(r, source, where);
  if (kind == "remove") return read_remove(r);
  return r.fail("\"action\" is \"{}\", not \"install\" or \"remove\"", kind);
}

Result<Unresolved> read_unresolved(const nlohmann::json& value, const std::string& where,
                                   std::string_view source) {
  const JsonFields r = fields(value, source, where);
  VENVFIX_TRY_ASSIGN(std::string kind, r.string("kind"));
  if (kind == "placeholder") {
    Placeholder entry;
    VENVFIX_TRY_ASSIGN(entry.dist, r.string("dist"));
    VENVFIX_TRY_ASSIGN(entry.use, r.string("use"));
    VENVFIX_TRY_ASSIGN(entry.message, r.string("message"));
    return Unresolved(std::move(entry));
  }
  if (kind == "conflicting-requirements") {
    ConflictingRequirements entry;
    VENVFIX_TRY_ASSIGN(entry.dist, r.string("dist"));
    VENVFIX_TRY_ASSIGN(entry.requirements, r.strings("requirements"));
    VENVFIX_TRY_ASSIGN(entry.message, r.string("message"));
    return Unresolved(std::move(entry));
  }
  if (kind == "protected-layer") {
    ProtectedLayer entry;
    VENVFIX_TRY_ASSIGN(entry.dist, r.string("dist"));
    VENVFIX_TRY_ASSIGN(entry.version, r.string("version"));
    VENVFIX_TRY_ASSIGN(entry.layer, r.string("layer"));
    VENVFIX_TRY_ASSIGN(entry.message, r.string("message"));
    return Unresolved(std::move(entry));
  }
  // The planner's cuda-mix entry says only why the distribution stays; the finding, with
  // its CUDA majors, is in `findings`.
  if (kind == "cuda-mix" && !r.has("cuda_major")) {
    KeptCudaMix entry;
    VENVFIX_TRY_ASSIGN(entry.dist, r.string("dist"));
    VENVFIX_TRY_ASSIGN(entry.required_by_installed, r.strings("required_by_installed"));
    VENVFIX_TRY_ASSIGN(entry.message, r.string("message"));
    return Unresolved(std::move(entry));
  }
  VENVFIX_TRY_ASSIGN(verify::Finding finding,
                     verify::finding_from_json(value, context_of(source, where), ExitCode::usage,
                                               verify::SeverityField::omitted));
  return Unresolved(std::move(finding));
}

Result<Note> read_note(const nlohmann::json& value, const std::string& where,
                       std::string_view source) {
  const JsonFields r = fields(value, source, where);
  Note note;
  VENVFIX_TRY_ASSIGN(std::string kind, r.string("kind"));
  VENVFIX_TRY_ASSIGN(note.message, r.string("message"));
  if (kind == "driver-library") {
    DriverLibrary about;
    VENVFIX_TRY_ASSIGN(about.soname, r.string("soname"));
    VENVFIX_TRY_ASSIGN(about.needed_by, r.strings("needed_by"));
    note.about = std::move(about);
  } else if (kind == "kept-foreign-cuda") {
    VENVFIX_TRY_ASSIGN(std::string dist, r.string("dist"));
    note.about = KeptForeignCuda{std::move(dist)};
  } else if (kind == "unmet-requirement") {
    UnmetByUninstall about;
    VENVFIX_TRY_ASSIGN(about.dist, r.string("dist"));
    VENVFIX_TRY_ASSIGN(about.required_by, r.string("required_by"));
    note.about = std::move(about);
  } else {
    return r.fail("\"kind\" is \"{}\", not a kind of note venvfix knows", kind);
  }
  return note;
}

// Each entry of the array `key` read by `read`; "<label> N" names an entry in errors.
template <typename T, typename Reader>
Result<std::vector<T>> read_list(const JsonFields& r, std::string_view key, Presence presence,
                                 std::string_view label, std::string_view source, Reader read) {
  VENVFIX_TRY_ASSIGN(const nlohmann::json* list, r.array(key, presence));
  std::vector<T> out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string where = fmt::format("{} {}", label, i + 1);
    const nlohmann::json& value = (*list)[i];
    if (!value.is_object()) {
      return make_error(ExitCode::usage, "{} is not an object", context_of(source, where));
    }
    VENVFIX_TRY_ASSIGN(T item, read(value, where, source));
    out.push_back(std::move(item));
  }
  return out;
}

Result<DistState> read_dist_state(const nlohmann::json& value, const std::string& where,
                                  std::string_view source) {
  const JsonFields r = fields(value, source, where);
  DistState state;
  VENVFIX_TRY_ASSIGN(state.dist, r.string("dist"));
  VENVFIX_TRY_ASSIGN(state.version, r.string("version"));
  VENVFIX_TRY_ASSIGN(state.digest, r.string("digest"));
  return state;
}

Result<verify::Finding> read_finding(const nlohmann::json& value, const std::string& where,
                                     std::string_view source) {
  return verify::finding_from_json(value, context_of(source, where), ExitCode::usage);
}

Result<nlohmann::json> document_of(std::string_view text, std::string_view source_name) {
  nlohmann::json document = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    return make_error(ExitCode::usage, "{} is not a plan: it is not valid JSON", source_name);
  }
  if (!document.is_object()) {
    return make_error(ExitCode::usage, "{} is not a plan: the document is not a JSON object",
                      source_name);
  }
  return document;
}

}  // namespace

Result<Plan> parse_plan(std::string_view text, std::string_view source_name) {
  VENVFIX_TRY_ASSIGN(const nlohmann::json document, document_of(text, source_name));
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
  VENVFIX_TRY_ASSIGN(plan.state_dists,
                     read_list<DistState>(r, "state_dists", Presence::optional, "state_dists entry",
                                          source_name, read_dist_state));
  VENVFIX_TRY_ASSIGN(plan.findings,
                     read_list<verify::Finding>(r, "findings", Presence::optional, "finding",
                                                source_name, read_finding));
  VENVFIX_TRY_ASSIGN(plan.actions, read_list<Action>(r, "actions", Presence::required, "action",
                                                     source_name, read_action));
  VENVFIX_TRY_ASSIGN(plan.unresolved,
                     read_list<Unresolved>(r, "unresolved", Presence::optional, "unresolved entry",
                                           source_name, read_unresolved));
  VENVFIX_TRY_ASSIGN(
      plan.notes, read_list<Note>(r, "notes", Presence::optional, "note", source_name, read_note));
  return plan;
}

}  // namespace venvfix::plan
