// Rendering of an Analysis: the versioned JSON document (`venvfix-doctor/1`) and the grouped,
// human-readable report for a terminal.
#pragma once

#include <ostream>

#include <nlohmann/json_fwd.hpp>

#include "venvfix/verify/analysis.hpp"

namespace venvfix::verify {

enum class Colors { off, on };

struct ProbeResult;  // verify/probe.hpp

// With `probe` (doctor --probe) the document also has "probe" (probe_json).
nlohmann::json doctor_json(const Analysis& analysis, const ProbeResult* probe = nullptr);
void print_doctor_report(const Analysis& analysis, std::ostream& out, Colors colors);

}  // namespace venvfix::verify
