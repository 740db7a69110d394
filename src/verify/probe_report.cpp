// The probe's part of the doctor report: the `probe` JSON object and its text section.
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "venvfix/verify/probe.hpp"

namespace venvfix::verify {

std::string_view to_string(ProbeKind kind) {
  switch (kind) {
    case ProbeKind::import_failed:
      return "import-failed";
    case ProbeKind::escaped_at_runtime:
      return "escaped-at-runtime";
    case ProbeKind::foreign_cuda_loaded:
      return "foreign-cuda-loaded";
    case ProbeKind::mixed_builds:
      return "mixed-builds";
    case ProbeKind::loaded_though_unresolved:
      return "loaded-though-unresolved";
    case ProbeKind::version_mismatch:
      return "version-mismatch";
    case ProbeKind::cudnn_incompatible:
      return "cudnn-incompatible";
  }
  return "import-failed";
}

namespace {

nlohmann::json finding_json(const ProbeFinding& finding) {
  nlohmann::json out = {{"kind", to_string(finding.kind)},
                        {"severity", to_string(finding.severity)},
                        {"message", finding.message}};
  if (!finding.soname.empty()) out["soname"] = finding.soname;
  if (!finding.paths.empty()) out["paths"] = finding.paths;
  if (!finding.dists.empty()) out["dists"] = finding.dists;
  if (!finding.version.empty()) out["version"] = finding.version;
  if (!finding.expected.empty()) out["expected"] = finding.expected;
  if (finding.cuda_major != 0) out["cuda_major"] = finding.cuda_major;
  if (!finding.error.empty()) out["error"] = finding.error;
  return out;
}

}  // namespace

nlohmann::json probe_json(const ProbeResult& result) {
  const ProbeRun& run = result.run;
  nlohmann::json loaded = nlohmann::json::array();
  for (const LoadedLibrary& library : result.loaded) {
    nlohmann::json entry = {{"soname", library.soname},
                            {"path", library.path.string()},
                            {"dists", library.dists},
                            {"inside_venv", library.inside_venv}};
    if (!library.version.empty()) {
      entry["version"] = library.version;
      entry["version_from"] = library.version_symbol;
    }
    loaded.push_back(std::move(entry));
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const ProbeFinding& finding : result.findings) findings.push_back(finding_json(finding));
  nlohmann::json out = {{"statement", run.statement},     {"python", run.python},
                        {"loader_view", run.loader_view}, {"ok", run.import_ok},
                        {"completed", run.completed},     {"exit_code", run.exit_code},
                        {"timed_out", run.timed_out},     {"seconds", run.seconds},
                        {"loaded", std::move(loaded)},    {"findings", std::move(findings)}};
  if (!run.error.empty()) out["error"] = run.error;
  if (!run.view_note.empty()) out["view_note"] = run.view_note;
  return out;
}

void print_probe_report(const ProbeResult& result, std::ostream& out, Colors colors) {
  const bool on = colors == Colors::on;
  const char* red = on ? "\033[31m" : "";
  const char* yellow = on ? "\033[33m" : "";
  const char* green = on ? "\033[32m" : "";
  const char* bold = on ? "\033[1m" : "";
  const char* dim = on ? "\033[2m" : "";
  const char* reset = on ? "\033[0m" : "";
  const ProbeRun& run = result.run;
  out << "\n"
      << bold << "probe" << reset << "    `" << run.statement << "` in " << run.python << " ("
      << run.loader_view << ", " << fmt::format("{:.2f} s", run.seconds) << ")\n";
  if (!run.view_note.empty()) out << "  " << dim << run.view_note << reset << "\n";
  std::size_t outside = 0;
  for (const LoadedLibrary& library : result.loaded) {
    if (library.inside_venv) continue;
    ++outside;
  }
  out << "  " << dim
      << fmt::format("{} shared objects mapped, {} from the venv", result.loaded.size(),
                     result.loaded.size() - outside)
      << reset << "\n";
  for (const LoadedLibrary& library : result.loaded) {
    if (library.version.empty()) continue;
    out << "  " << dim
        << fmt::format("{} {} ({})", library.soname, library.version, library.version_symbol)
        << reset << "\n";
  }
  for (const ProbeFinding& finding : result.findings) {
    bool problem = finding.severity == Severity::problem;
    out << "  " << (problem ? red : yellow) << (problem ? "✗ " : "! ") << reset << bold
        << to_string(finding.kind) << reset << "  " << finding.message << "\n";
  }
  if (run.import_ok && result.findings.empty()) {
    out << green << "✓ the import works and loads what the static analysis says" << reset << "\n";
  }
}

}  // namespace venvfix::verify
