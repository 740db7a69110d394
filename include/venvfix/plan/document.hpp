// The plan document (`venvfix plan --json`, `venvfix plan -o FILE`, `venvfix apply PLAN`):
// the "venvfix-plan/1" schema (docs/plan.md, "The document"; docs/cli.md lists its fields).
// The contract's field names are fixed; the ones venvfix adds are documented in docs/plan.md.
//
// Writing is deterministic: the same Plan gives byte-identical text (keys in a fixed order,
// arrays in the order the planner made them, no timestamps).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "venvfix/base/result.hpp"

namespace venvfix::plan {

inline constexpr std::string_view plan_schema = "venvfix-plan/1";

struct DistVersion {
  std::string dist;  // as the distribution spells its name ("nvidia-cudnn-cu12")
  std::string version;
};

enum class ActionKind { install, remove };
std::string_view to_string(ActionKind kind);

struct Action {
  ActionKind kind = ActionKind::install;
  std::string dist;
  std::string version;
  // install: the installed distribution this one replaces (same name, any version; also a
  // ghost); unset for a fresh install, written as `"replaces": null`. remove: unset.
  std::optional<DistVersion> replaces;
  // install: the wheel chosen from the index (file name, URL without user-info, sha256 hex,
  // size in bytes).
  std::string file;
  std::string url;
  std::string sha256;
  std::uint64_t size = 0;
  std::vector<std::string> provides;  // sonames this action restores (install)
  std::string reason;                 // one sentence: sonames, consumers, the rule
  // Added by venvfix (docs/plan.md): the rule that chose the action, machine-readable.
  // install: "pin" (a target's Requires-Dist, meta-package extras followed), "installed" (the
  // installed version of a ghost or clobbered distribution), "manifest" (manifests/ for the
  // target's CUDA major, newest version allowed), "newest" (newest version every installed
  // requirement allows); each with "repair:" in front when it repairs what a removal of the
  // same plan breaks. remove: "conflicting-cuda", "foreign-cuda" (--remove-foreign-cuda),
  // "uninstall" (--uninstall). Empty in plans written without it.
  std::string rule;
  // remove: site-packages-relative paths of the removed distribution's RECORD that are kept
  // because a remaining distribution also owns them.
  std::vector<std::string> keep;
};

struct Plan {
  std::string venv;      // absolute path of the venv the plan was made for
  std::string python;    // "3.12"
  std::string platform;  // the best platform tag of the host ("manylinux_2_36_x86_64")
  std::vector<std::string> targets;
  std::string state;  // state digest of the venv the plan was made from
  // Every finding `doctor --json` reports for the same venv (warnings too), in its order.
  nlohmann::json findings = nlohmann::json::array();
  std::vector<Action> actions;  // empty: nothing to do
  // Problems the plan cannot fix (a soname nothing provides, conflicting pins): each has the
  // finding's fields plus "message"; the rest of the plan still stands.
  nlohmann::json unresolved = nlohmann::json::array();
  // Added by venvfix: facts that need no action (a driver library this host lacks, "provided
  // by the driver"; a removal left out because a target would break), each with "message".
  nlohmann::json notes = nlohmann::json::array();
};

nlohmann::json to_json(const Plan& plan);
// to_json(plan).dump(2) plus a final newline.
std::string to_text(const Plan& plan);

// Reads a plan document. Errors (ExitCode::usage) name `source_name` and what is wrong: not
// JSON, another schema, a missing or mistyped field, an action that is neither install nor
// remove, an install without url/sha256 (64 hex digits)/file.
Result<Plan> parse_plan(std::string_view text, std::string_view source_name);

}  // namespace venvfix::plan
