#include "venvfix/plan/document.hpp"

#include <algorithm>

#include "venvfix/base/json_fields.hpp"
#include "venvfix/base/json_text.hpp"

namespace venvfix::plan {

using nlohmann::ordered_json;

std::string_view to_string(ActionKind kind) {
  return kind == ActionKind::install ? "install" : "remove";
}

const std::string& dist_of(const Action& action) {
  return std::visit([](const auto& a) -> const std::string& { return a.dist; }, action);
}

const std::string& version_of(const Action& action) {
  return std::visit([](const auto& a) -> const std::string& { return a.version; }, action);
}

const std::string& reason_of(const Action& action) {
  return std::visit([](const auto& a) -> const std::string& { return a.reason; }, action);
}

const std::string& message_of(const Unresolved& entry) {
  return std::visit([](const auto& e) -> const std::string& { return e.message; }, entry);
}

const std::string& dist_of(const Unresolved& entry) {
  return std::visit([](const auto& e) -> const std::string& { return e.dist; }, entry);
}

std::string_view soname_of(const Unresolved& entry) {
  const auto* finding = std::get_if<verify::Finding>(&entry);
  return finding == nullptr ? std::string_view() : verify::soname_of(*finding);
}

namespace {

// ordered_json keeps the contract's key order in the written document; findings, unresolved
// entries and notes are plain json (sorted keys), converted as they are.
ordered_json action_json(const Install& action) {
  ordered_json out;
  out["action"] = "install";
  out["dist"] = action.dist;
  out["version"] = action.version;
  if (action.replaces) {
    out["replaces"] = {{"dist", action.replaces->dist}, {"version", action.replaces->version}};
  } else {
    out["replaces"] = nullptr;  // the contract: present on every install, null when fresh
  }
  out["file"] = action.file;
  out["url"] = action.url;
  out["sha256"] = action.sha256;
  out["size"] = action.size;
  out["provides"] = action.provides;
  out["reason"] = action.reason;
  if (!action.rule.empty()) out["rule"] = action.rule;
  return out;
}

ordered_json action_json(const Remove& action) {
  ordered_json out;
  out["action"] = "remove";
  out["dist"] = action.dist;
  out["version"] = action.version;
  if (!action.keep.empty()) out["keep"] = action.keep;
  out["reason"] = action.reason;
  if (!action.rule.empty()) out["rule"] = action.rule;
  return out;
}

struct UnresolvedWriter {
  nlohmann::json operator()(const verify::Finding& f) const {
    return verify::to_json(f, verify::SeverityField::omitted);
  }
  nlohmann::json operator()(const Placeholder& e) const {
    return {{"kind", "placeholder"}, {"dist", e.dist}, {"use", e.use}, {"message", e.message}};
  }
  nlohmann::json operator()(const ConflictingRequirements& e) const {
    return {{"kind", "conflicting-requirements"},
            {"dist", e.dist},
            {"requirements", e.requirements},
            {"message", e.message}};
  }
  nlohmann::json operator()(const ProtectedLayer& e) const {
    return {{"kind", "protected-layer"},
            {"dist", e.dist},
            {"version", e.version},
            {"layer", e.layer},
            {"message", e.message}};
  }
  nlohmann::json operator()(const KeptCudaMix& e) const {
    nlohmann::json out = {{"kind", "cuda-mix"}, {"dist", e.dist}, {"message", e.message}};
    if (!e.required_by_installed.empty()) out["required_by_installed"] = e.required_by_installed;
    return out;
  }
};

struct NoteWriter {
  const std::string& message;

  nlohmann::json operator()(const DriverLibrary& n) const {
    return {{"kind", "driver-library"},
            {"soname", n.soname},
            {"needed_by", n.needed_by},
            {"provided_by", "driver"},
            {"message", message}};
  }
  nlohmann::json operator()(const KeptForeignCuda& n) const {
    return {{"kind", "kept-foreign-cuda"}, {"dist", n.dist}, {"message", message}};
  }
  nlohmann::json operator()(const UnmetByUninstall& n) const {
    return {{"kind", "unmet-requirement"},
            {"dist", n.dist},
            {"required_by", n.required_by},
            {"message", message}};
  }
};

}  // namespace

nlohmann::json to_json(const Unresolved& entry) {
  return std::visit(UnresolvedWriter{}, entry);
}

nlohmann::json to_json(const Note& note) {
  return std::visit(NoteWriter{note.message}, note.about);
}

namespace {

ordered_json document_of(const Plan& plan) {
  ordered_json out;
  out["schema"] = plan_schema;
  out["venv"] = plan.venv;
  out["python"] = plan.python;
  out["platform"] = plan.platform;
  out["targets"] = plan.targets;
  out["state"] = plan.state;
  if (!plan.state_dists.empty()) {
    ordered_json dists = ordered_json::array();
    for (const DistState& state : plan.state_dists) {
      ordered_json entry;
      entry["dist"] = state.dist;
      entry["version"] = state.version;
      entry["digest"] = state.digest;
      dists.push_back(std::move(entry));
    }
    out["state_dists"] = std::move(dists);
  }
  ordered_json findings = ordered_json::array();
  for (const verify::Finding& finding : plan.findings) {
    findings.push_back(ordered_json(verify::to_json(finding)));
  }
  out["findings"] = std::move(findings);
  ordered_json actions = ordered_json::array();
  for (const Action& action : plan.actions) {
    actions.push_back(std::visit([](const auto& a) { return action_json(a); }, action));
  }
  out["actions"] = std::move(actions);
  if (!plan.unresolved.empty()) {
    ordered_json unresolved = ordered_json::array();
    for (const Unresolved& entry : plan.unresolved)
      unresolved.push_back(ordered_json(to_json(entry)));
    out["unresolved"] = std::move(unresolved);
  }
  if (!plan.notes.empty()) {
    ordered_json notes = ordered_json::array();
    for (const Note& note : plan.notes) notes.push_back(ordered_json(to_json(note)));
    out["notes"] = std::move(notes);
  }
  return out;
}

}  // namespace

nlohmann::json to_json(const Plan& plan) {
  return nlohmann::json(document_of(plan));
}

std::string to_text(const Plan& plan) {
  return json_text(document_of(plan), 2) + "\n";
}

}  // namespace venvfix::plan
