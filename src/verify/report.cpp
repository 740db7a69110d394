#include "venvfix/verify/report.hpp"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "venvfix/verify/probe.hpp"

namespace venvfix::verify {

namespace {

constexpr std::size_t k_max_listed_paths = 8;

struct Palette {
  const char* red = "";
  const char* yellow = "";
  const char* green = "";
  const char* bold = "";
  const char* dim = "";
  const char* reset = "";
};

Palette palette_for(Colors colors) {
  if (colors == Colors::off) return {};
  return {"\033[31m", "\033[33m", "\033[32m", "\033[1m", "\033[2m", "\033[0m"};
}

void print_list(std::ostream& out, const Palette& p, std::string_view label,
                const std::vector<std::string>& items) {
  if (items.empty()) return;
  out << "      " << p.dim << label << ":" << p.reset << "\n";
  std::size_t shown = std::min(items.size(), k_max_listed_paths);
  for (std::size_t i = 0; i < shown; ++i) out << "        " << items[i] << "\n";
  if (items.size() > shown) {
    out << "        " << p.dim << fmt::format("… and {} more", items.size() - shown) << p.reset
        << "\n";
  }
}

void print_finding(std::ostream& out, const Palette& p, const Finding& finding) {
  bool problem = finding.severity == Severity::problem;
  out << "  " << (problem ? p.red : p.yellow) << (problem ? "✗ " : "! ") << p.reset << p.bold
      << to_string(finding.kind()) << p.reset << "  " << finding.message << "\n";
  if (const auto* ghost = finding.as<GhostFiles>()) {
    print_list(out, p, "missing", ghost->missing);
    print_list(out, p, "differs from RECORD", ghost->mismatched);
  }
  print_list(out, p, "paths", finding.paths);
  if (const auto* escaped = finding.as<EscapedSoname>()) {
    print_list(out, p, "needed by", escaped->needed_by);
  }
  if (const auto* unresolved = finding.as<UnresolvedSoname>()) {
    print_list(out, p, "needed by", unresolved->needed_by);
    if (!unresolved->note.empty()) out << "      " << p.dim << unresolved->note << p.reset << "\n";
  }
}

}  // namespace

nlohmann::json doctor_json(const Analysis& analysis, const ProbeResult* probe, GuardState guard) {
  // "targets" holds names, as in the plan document; "target_details" says what was found.
  nlohmann::json targets = nlohmann::json::array();
  nlohmann::json details = nlohmann::json::array();
  for (const Target& target : analysis.targets) {
    const auto& dist = analysis.inventory.distributions[target.dist];
    targets.push_back(dist.normalized_name);
    nlohmann::json entry = {{"dist", dist.normalized_name}, {"version", dist.version}};
    if (target.cuda_major != 0) entry["cuda_major"] = target.cuda_major;
    if (!target.cuda_version.empty()) entry["cuda"] = target.cuda_version;
    entry["elf_objects"] = target.elf_objects.size();
    details.push_back(std::move(entry));
  }
  nlohmann::json findings = nlohmann::json::array();
  std::size_t problems = 0;
  for (const Finding& finding : analysis.findings) {
    findings.push_back(to_json(finding));
    if (finding.severity == Severity::problem) ++problems;
  }
  nlohmann::json notes = nlohmann::json::array();
  for (const Finding& note : analysis.notes) {
    const auto* driver = note.as<UnresolvedSoname>();
    notes.push_back({{"soname", driver->soname},
                     {"needed_by", driver->needed_by},
                     {"provided_by", "driver"},
                     {"message", note.message}});
  }
  nlohmann::json out = {
      {"schema", "venvfix-doctor/1"},
      {"venv", analysis.venv.root.string()},
      {"python", fmt::format("{}.{}", analysis.venv.python.major, analysis.venv.python.minor)},
      {"targets", std::move(targets)},
      {"target_details", std::move(details)},
      {"summary",
       {{"problems", problems},
        {"warnings", analysis.findings.size() - problems},
        {"distributions", analysis.inventory.distributions.size()}}},
      {"findings", std::move(findings)},
      {"notes", std::move(notes)},
      {"assumptions", analysis.assumptions}};
  if (probe != nullptr) out["probe"] = probe_json(*probe);
  out["guard"] =
      guard == GuardState::unknown ? nlohmann::json() : nlohmann::json(guard == GuardState::on);
  return out;
}

void print_doctor_report(const Analysis& analysis, std::ostream& out, Colors colors) {
  Palette p = palette_for(colors);
  out << p.bold << "venv" << p.reset << "     " << analysis.venv.root.string() << " (Python "
      << analysis.venv.python.major << "." << analysis.venv.python.minor << ", "
      << analysis.inventory.distributions.size() << " distributions)\n";
  out << p.bold << "targets" << p.reset << "  ";
  if (analysis.targets.empty()) out << "none (nothing to check)";
  for (std::size_t i = 0; i < analysis.targets.size(); ++i) {
    const Target& target = analysis.targets[i];
    const auto& dist = analysis.inventory.distributions[target.dist];
    if (i > 0) out << ", ";
    out << dist.normalized_name << " " << dist.version;
    if (target.cuda_major != 0) out << " (CUDA " << target.cuda_major << ")";
  }
  out << "\n\n";

  std::size_t problems = 0;
  for (const Finding& finding : analysis.findings) {
    if (finding.severity == Severity::problem) ++problems;
  }
  std::size_t warnings = analysis.findings.size() - problems;
  if (problems > 0) {
    out << p.red << p.bold << "Problems" << p.reset << "\n";
    for (const Finding& finding : analysis.findings) {
      if (finding.severity == Severity::problem) print_finding(out, p, finding);
    }
    out << "\n";
  }
  if (warnings > 0) {
    out << p.yellow << p.bold << "Warnings" << p.reset << "\n";
    for (const Finding& finding : analysis.findings) {
      if (finding.severity == Severity::warning) print_finding(out, p, finding);
    }
    out << "\n";
  }
  if (!analysis.notes.empty() || !analysis.assumptions.empty()) {
    out << p.bold << "Notes" << p.reset << "\n";
    for (const Finding& note : analysis.notes) {
      out << "  " << p.dim << "· " << note.message << p.reset << "\n";
    }
    for (const std::string& assumption : analysis.assumptions) {
      out << "  " << p.dim << "· " << assumption << p.reset << "\n";
    }
    out << "\n";
  }
  if (problems == 0 && warnings == 0) {
    out << p.green << "✓ healthy: every soname the targets load resolves inside the venv" << p.reset
        << "\n";
  } else {
    out << fmt::format("{} problem{}, {} warning{}", problems, problems == 1 ? "" : "s", warnings,
                       warnings == 1 ? "" : "s")
        << "\n";
  }
}

}  // namespace venvfix::verify
