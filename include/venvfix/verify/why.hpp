// `venvfix why SONAME`: who needs a soname, who provides it, and where the loader finds it for
// each consumer and why — or why it finds nothing.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "venvfix/verify/analysis.hpp"
#include "venvfix/verify/report.hpp"

namespace venvfix::verify {

struct SonameConsumer {
  std::string consumer;  // display path
  bool dlopen = false;
  elf::Resolution resolution;
  std::string explanation;              // one sentence: where and why, or why not
  std::vector<std::string> fails_when;  // ways of loading torch on which it fails
};

struct SonameProvider {
  std::string dist;
  std::string version;
  std::string path;  // display path
  bool present = false;
};

struct WhyReport {
  std::string soname;
  std::vector<SonameConsumer> consumers;
  std::vector<SonameProvider> providers;        // installed distributions whose RECORD lists it
  std::vector<std::string> manifest_providers;  // wheels that ship it, for the targets' CUDA
  // Installed distributions whose removal the way pip does would take it from the targets.
  std::vector<std::string> removal_takes;
  std::optional<manifest::Provider> system_provider;
};

WhyReport explain_soname(const Analysis& analysis, const manifest::Manifests& manifests,
                         const std::string& soname);
nlohmann::json why_json(const Analysis& analysis, const WhyReport& report);
void print_why_report(const Analysis& analysis, const WhyReport& report, std::ostream& out,
                      Colors colors);

}  // namespace venvfix::verify
