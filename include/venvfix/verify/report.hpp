// Rendering of an Analysis: the versioned JSON document (`venvfix-doctor/1`) and the grouped,
// human-readable report for a terminal.
#pragma once

#include <ostream>

#include <nlohmann/json_fwd.hpp>

#include "venvfix/verify/analysis.hpp"

namespace venvfix::verify {

enum class Colors { off, on };

struct ProbeResult;  // verify/probe.hpp

// Whether pip and uv run guarded in the venv (`venvfix guard`): on, off, or unknown (its state
// could not be read). verify does not read it; the caller says.
enum class GuardState { on, off, unknown };

// With `probe` (doctor --probe) the document also has "probe" (probe_json); "guard" is
// true, false or null.
nlohmann::json doctor_json(const Analysis& analysis, const ProbeResult* probe = nullptr,
                           GuardState guard = GuardState::off);
void print_doctor_report(const Analysis& analysis, std::ostream& out, Colors colors);

}  // namespace venvfix::verify
