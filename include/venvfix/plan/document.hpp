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
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "venvfix/base/result.hpp"
#include "venvfix/verify/finding.hpp"

namespace venvfix::plan {

inline constexpr std::string_view plan_schema = "venvfix-plan/1";

struct DistVersion {
  std::string dist;  // as the distribution spells its name ("nvidia-cudnn-cu12")
  std::string version;
};

struct Install {
  std::string dist;
  std::string version;
  // The installed distribution this one replaces (same name, any version; also a ghost);
  // unset for a fresh install, written as `"replaces": null`.
  std::optional<DistVersion> replaces;
  // The wheel chosen from the index (file name, URL without user-info, sha256 hex, size in
  // bytes).
  std::string file;
  std::string url;
  std::string sha256;
  std::uint64_t size = 0;
  std::vector<std::string> provides;  // sonames this action restores
  std::string reason;                 // one sentence: sonames, consumers, the rule
  // Added by venvfix (docs/plan.md): the rule that chose the version, machine-readable: "pin"
  // (a target's Requires-Dist, meta-package extras followed), "installed" (the installed
  // version of a ghost or clobbered distribution), "manifest" (manifests/ for the target's
  // CUDA major, newest version allowed), "newest" (newest version every installed requirement
  // allows); each with "repair:" in front when it repairs what a removal of the same plan
  // breaks. Empty in plans written without it.
  std::string rule;
};

struct Remove {
  std::string dist;
  std::string version;
  // Site-packages-relative paths of the removed distribution's RECORD that are kept because
  // a remaining distribution also owns them.
  std::vector<std::string> keep;
  std::string reason;
  // "conflicting-cuda", "foreign-cuda" (--remove-foreign-cuda), "uninstall" (--uninstall);
  // empty in plans written without it.
  std::string rule;
};

using Action = std::variant<Install, Remove>;

// In the order of Action's alternatives.
enum class ActionKind { install, remove };
std::string_view to_string(ActionKind kind);
inline ActionKind kind_of(const Action& action) {
  return static_cast<ActionKind>(action.index());
}
// The fields both kinds have.
const std::string& dist_of(const Action& action);
const std::string& version_of(const Action& action);
const std::string& reason_of(const Action& action);

// What the plan cannot fix (the rest of the plan still stands): a finding no action answers
// (a soname the system must provide, shared paths between two owners that both stay, a soname
// nothing provides, …; written without its severity), or one of the planner's own refusals.
struct Placeholder {  // "placeholder": a want of a CUDA 13 source-only placeholder
  std::string dist;
  std::string use;  // the real component
  std::string message;
};
struct ConflictingRequirements {  // "conflicting-requirements"
  std::string dist;
  std::vector<std::string> requirements;  // every requirement on it, with who requires it
  std::string message;
};
// "cuda-mix": a conflicting foreign-CUDA distribution that cannot go; the finding itself is in
// `findings`. required_by_installed: the installed distributions that require it (empty:
// removing it would leave a target soname unresolved).
struct KeptCudaMix {
  std::string dist;
  std::vector<std::string> required_by_installed;
  std::string message;
};
// "protected-layer": an action left out because it would change a layer a plan never changes
// (the base prefix of a --system-site-packages venv, or packages the system owns).
struct ProtectedLayer {
  std::string dist;
  std::string version;
  std::string layer;  // "base" or "system"
  std::string message;
};
using Unresolved = std::variant<verify::Finding, Placeholder, ConflictingRequirements, KeptCudaMix,
                                ProtectedLayer>;

const std::string& message_of(const Unresolved& entry);
const std::string& dist_of(const Unresolved& entry);  // "" for a finding without one
std::string_view soname_of(const Unresolved& entry);  // only soname findings have one

// Facts that need no action (added by venvfix).
struct DriverLibrary {  // "driver-library": provided by the GPU driver, which this host lacks
  std::string soname;
  std::vector<std::string> needed_by;
};
struct KeptForeignCuda {  // "kept-foreign-cuda": a foreign-CUDA distribution that stays
  std::string dist;
};
// "unmet-requirement": uninstalling `dist` leaves a requirement of `required_by`, which no
// target needs, unmet.
struct UnmetByUninstall {
  std::string dist;
  std::string required_by;
};
struct Note {
  std::string message;
  std::variant<DriverLibrary, KeptForeignCuda, UnmetByUninstall> about;
};

// One distribution's part of the state a plan was made from, so that a venv that drifted can
// be told what differs ("state_dists" in the document).
struct DistState {
  std::string dist;  // normalised name
  std::string version;
  std::string digest;  // 16 hex digits over its dist-info, RECORD rows and checked files
  bool operator==(const DistState&) const = default;
};

struct Plan {
  std::string venv;      // absolute path of the venv the plan was made for
  std::string python;    // "3.12"
  std::string platform;  // the best platform tag of the host ("manylinux_2_36_x86_64")
  std::vector<std::string> targets;
  std::string state;                   // state digest of the venv the plan was made from
  std::vector<DistState> state_dists;  // per distribution; empty in plans of older venvfix
  // Every finding `doctor --json` reports for the same venv (warnings too), in its order.
  std::vector<verify::Finding> findings;
  std::vector<Action> actions;  // empty: nothing to do
  std::vector<Unresolved> unresolved;
  std::vector<Note> notes;
};

nlohmann::json to_json(const Plan& plan);
nlohmann::json to_json(const Unresolved& entry);
nlohmann::json to_json(const Note& note);
// to_json(plan).dump(2) plus a final newline.
std::string to_text(const Plan& plan);

// Reads a plan document. Errors (ExitCode::usage) name `source_name` and what is wrong: not
// JSON, another schema, a missing or mistyped field, an action that is neither install nor
// remove, an install without url/sha256 (64 hex digits)/file, a finding, unresolved entry or
// note that finding_from_json (verify/finding.hpp) or the kinds above refuse.
Result<Plan> parse_plan(std::string_view text, std::string_view source_name);

}  // namespace venvfix::plan
