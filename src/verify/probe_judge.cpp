// judge_probe: what the live process mapped, set against the static analysis of the same venv.
#include <algorithm>
#include <map>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "steps.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/elf/elf_file.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/pep/requirement.hpp"
#include "venvfix/verify/probe.hpp"

namespace venvfix::verify {

namespace {

// "libcudart.so.12" -> "libcudart": the family two builds of one library share.
std::string family_of(std::string_view soname) {
  return std::string(soname.substr(0, soname.find(".so")));
}

// cudnnGetVersion: major*10000 + minor*100 + patch (cuDNN 9; 8 used major*1000); ncclGetVersion:
// the same from NCCL 2.9; cudaRuntimeGetVersion: major*1000 + minor*10.
std::pair<std::string, std::string> decode_version(std::string_view soname, long value) {
  std::string family = family_of(soname);
  if (family == "libcudart") {
    return {fmt::format("{}.{}", value / 1000, (value % 1000) / 10), "cudaRuntimeGetVersion"};
  }
  const char* symbol = family == "libcudnn" ? "cudnnGetVersion" : "ncclGetVersion";
  if (family == "libcudnn" && value < 90000) {
    return {fmt::format("{}.{}.{}", value / 1000, (value % 1000) / 100, value % 100), symbol};
  }
  return {fmt::format("{}.{}.{}", value / 10000, (value % 10000) / 100, value % 100), symbol};
}

// The first `count` dot-separated parts of a version ("9.10.2.21", 3 -> "9.10.2").
std::string leading_parts(std::string_view version, std::size_t count) {
  std::vector<std::string_view> parts = split(version, '.');
  if (parts.size() > count) parts.resize(count);
  std::string out;
  for (std::string_view part : parts) out += (out.empty() ? "" : ".") + std::string(part);
  return out;
}

// The `==` pins of the targets' Requires-Dist (markers true for this venv): name -> version.
std::map<std::string, std::string> target_pins(const Analysis& analysis) {
  std::map<std::string, std::string> pins;
  for (const Target& target : analysis.targets) {
    for (const std::string& text :
         analysis.inventory.distributions[target.dist].metadata.requires_dist) {
      auto requirement = pep::Requirement::parse(text);
      if (!requirement) continue;
      if (requirement->marker && !requirement->marker->evaluate(analysis.markers)) continue;
      for (const pep::Specifier& spec : requirement->specifier.specifiers()) {
        if (spec.op_text() == "==" && !spec.has_wildcard()) {
          pins.emplace(pep::normalize_name(requirement->name), spec.version_text());
        }
      }
    }
  }
  return pins;
}

ProbeFinding make_finding(ProbeKind kind, Severity severity, std::string message,
                          std::string soname = {}, std::vector<std::string> paths = {},
                          std::vector<std::string> dists = {}) {
  ProbeFinding finding;
  finding.kind = kind;
  finding.severity = severity;
  finding.message = std::move(message);
  finding.soname = std::move(soname);
  finding.paths = std::move(paths);
  finding.dists = std::move(dists);
  return finding;
}

struct Context {
  const Analysis& analysis;
  const manifest::Manifests& manifests;
  int target_major = 0;
  std::map<std::string, std::string> pins;
  std::map<std::string, std::set<std::string>> record_sonames;  // file name -> listing dists
};

// Where a mapped (canonical) path lies in the venv's own spelling, for owners_of.
fs::path venv_spelling(const fs::path& mapped, const env::Venv& venv) {
  for (const fs::path& site : venv.site_packages) {
    std::error_code error;
    fs::path canonical = fs::weakly_canonical(site, error);
    if (!error && is_inside(mapped, canonical)) return site / mapped.lexically_relative(canonical);
  }
  return mapped;
}

std::vector<LoadedLibrary> loaded_libraries(const ProbeRun& run, const Analysis& analysis) {
  std::error_code error;
  const fs::path root = fs::weakly_canonical(analysis.venv.root, error);
  std::map<std::string, long> versions(run.versions.begin(), run.versions.end());
  std::vector<LoadedLibrary> out;
  for (const std::string& mapped : run.mapped) {
    auto info = elf::read_elf(mapped);
    if (!info || !info->has_value() || (*info)->kind != elf::ElfKind::shared) continue;
    LoadedLibrary library;
    library.path = mapped;
    library.soname = (*info)->soname.empty() ? library.path.filename().string() : (*info)->soname;
    fs::path spelled = venv_spelling(library.path, analysis.venv);
    for (std::size_t owner : analysis.inventory.owners_of(spelled)) {
      library.dists.push_back(analysis.inventory.distributions[owner].normalized_name);
    }
    library.inside_venv =
        is_inside(library.path, root) || inside_environment(analysis.venv, spelled);
    if (auto it = versions.find(mapped); it != versions.end()) {
      std::tie(library.version, library.version_symbol) =
          decode_version(library.soname, it->second);
    }
    out.push_back(std::move(library));
  }
  std::sort(out.begin(), out.end(), [](const LoadedLibrary& a, const LoadedLibrary& b) {
    return std::tie(a.soname, a.path) < std::tie(b.soname, b.path);
  });
  return out;
}

// The CUDA major of a loaded library: its owner's, else the one its soname implies; 0 unknown.
int cuda_major_of(const LoadedLibrary& library, const Context& context) {
  for (const std::string& dist : library.dists) {
    const auto* known = context.manifests.find_distribution(dist);
    if (known != nullptr && known->cuda_major != 0) return known->cuda_major;
  }
  std::set<int> majors;
  for (const auto* provider : context.manifests.providers_of(library.soname, 0)) {
    majors.insert(provider->cuda_major);
  }
  return majors.size() == 1 ? *majors.begin() : 0;
}

// The distributions that should provide a soname in this venv: those whose RECORD lists a file
// of that name, else the manifests' providers for the target's CUDA major.
std::vector<std::string> should_provide(const std::string& soname, const Context& context) {
  if (auto it = context.record_sonames.find(soname); it != context.record_sonames.end()) {
    return {it->second.begin(), it->second.end()};
  }
  std::vector<std::string> out;
  if (context.target_major == 0) return out;
  for (const auto* provider : context.manifests.providers_of(soname, context.target_major)) {
    out.push_back(provider->name);
  }
  return out;
}

void judge_library(const LoadedLibrary& library, const Context& context,
                   std::vector<ProbeFinding>& findings) {
  if (!library.inside_venv) {
    std::vector<std::string> dists = should_provide(library.soname, context);
    if (!dists.empty()) {
      findings.push_back(make_finding(
          ProbeKind::escaped_at_runtime, Severity::problem,
          fmt::format("{} was loaded from {}, outside the venv, though {} should provide it "
                      "(escaped at run time)",
                      library.soname, library.path.string(), join(dists, ", ")),
          library.soname, {library.path.string()}, dists));
    }
  }
  int major = cuda_major_of(library, context);
  if (major != 0 && context.target_major != 0 && major != context.target_major) {
    ProbeFinding finding =
        make_finding(ProbeKind::foreign_cuda_loaded, Severity::problem,
                     fmt::format("{} (CUDA {}) was loaded from {}, but {} is built for CUDA {}",
                                 library.soname, major, library.path.string(),
                                 context.analysis.target_names(), context.target_major),
                     library.soname, {library.path.string()}, library.dists);
    finding.cuda_major = major;
    findings.push_back(std::move(finding));
  }
}

void judge_version(const LoadedLibrary& library, const Context& context,
                   std::vector<ProbeFinding>& findings) {
  if (library.version.empty()) return;
  std::vector<std::string> dists = library.dists;
  if (dists.empty()) dists = should_provide(library.soname, context);
  for (const std::string& dist : dists) {
    auto pin = context.pins.find(dist);
    if (pin == context.pins.end()) continue;
    const std::size_t parts = split(library.version, '.').size();
    const std::string expected = leading_parts(pin->second, parts);
    auto make = [&](ProbeKind kind, Severity severity, std::string message) {
      ProbeFinding finding = make_finding(kind, severity, std::move(message), library.soname,
                                          {library.path.string()}, {dist});
      finding.version = library.version;
      finding.expected = pin->second;
      findings.push_back(std::move(finding));
    };
    if (family_of(library.soname) == "libcudnn") {
      // torch's rule (torch/backends/cudnn): same major, runtime minor >= compiled minor.
      auto runtime = split(library.version, '.');
      auto compiled = split(pin->second, '.');
      bool same_major = !runtime.empty() && !compiled.empty() && runtime[0] == compiled[0];
      int runtime_minor = runtime.size() > 1 ? std::atoi(std::string(runtime[1]).c_str()) : 0;
      int compiled_minor = compiled.size() > 1 ? std::atoi(std::string(compiled[1]).c_str()) : 0;
      if (!same_major || runtime_minor < compiled_minor) {
        make(ProbeKind::cudnn_incompatible, Severity::problem,
             fmt::format("the loaded cuDNN {} ({}) breaks torch's rule for the cuDNN {} it was "
                         "built with (same major, minor at least {})",
                         library.version, library.path.string(), leading_parts(pin->second, 2),
                         compiled_minor));
        return;
      }
    }
    if (library.version != expected) {
      make(ProbeKind::version_mismatch, Severity::warning,
           fmt::format("{} reports version {} ({}), but {} pins {}=={}", library.soname,
                       library.version, library.version_symbol, context.analysis.target_names(),
                       dist, pin->second));
    }
    return;
  }
}

void judge_families(const std::vector<LoadedLibrary>& loaded, const Context& context,
                    std::vector<ProbeFinding>& findings) {
  std::map<std::string, std::vector<const LoadedLibrary*>> families;
  for (const LoadedLibrary& library : loaded)
    families[family_of(library.soname)].push_back(&library);
  for (const auto& [family, members] : families) {
    if (members.size() < 2) continue;
    std::vector<std::string> paths, sonames;
    bool known = false;
    for (const LoadedLibrary* member : members) {
      paths.push_back(member->path.string());
      sonames.push_back(member->soname);
      known = known || !context.manifests.providers_of(member->soname, 0).empty();
    }
    findings.push_back(make_finding(ProbeKind::mixed_builds,
                                    known ? Severity::problem : Severity::warning,
                                    fmt::format("{} builds of {} are mapped at once: {}",
                                                members.size(), family, join(paths, ", ")),
                                    members.front()->soname, paths));
  }
}

void judge_static_answer(const std::vector<LoadedLibrary>& loaded, const Context& context,
                         std::vector<ProbeFinding>& findings) {
  std::map<std::string, const LoadedLibrary*> by_soname;
  for (const LoadedLibrary& library : loaded) by_soname.emplace(library.soname, &library);
  std::set<std::string> seen;
  for (const SonameUse& use : context.analysis.uses) {
    if (use.resolution.resolved() || !seen.insert(use.soname).second) continue;
    auto it = by_soname.find(use.soname);
    if (it == by_soname.end()) continue;
    ProbeFinding finding =
        make_finding(ProbeKind::loaded_though_unresolved, Severity::warning,
                     fmt::format("{} loaded from {}, though the static analysis found it "
                                 "unresolved for {}",
                                 use.soname, it->second->path.string(),
                                 context.analysis.display_path(use.consumer)),
                     use.soname, {it->second->path.string()}, it->second->dists);
    finding.expected = "unresolved";
    findings.push_back(std::move(finding));
  }
}

}  // namespace

ProbeResult judge_probe(ProbeRun run, const Analysis& analysis,
                        const manifest::Manifests& manifests) {
  Context context{analysis, manifests, 0, {}, {}};
  for (const Target& target : analysis.targets) {
    if (target.cuda_major != 0 && context.target_major == 0)
      context.target_major = target.cuda_major;
  }
  context.pins = target_pins(analysis);
  for (const dist::Distribution& dist : analysis.inventory.distributions) {
    for (const dist::RecordEntry& entry : dist.record) {
      std::string_view path = entry.path;
      std::string name(
          path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1));
      if (name.find(".so") != std::string::npos)
        context.record_sonames[name].insert(dist.normalized_name);
    }
  }
  ProbeResult result;
  result.loaded = loaded_libraries(run, analysis);
  if (!run.import_ok) {
    ProbeFinding finding =
        make_finding(ProbeKind::import_failed, Severity::problem,
                     fmt::format("`{}` failed in {}: {}", run.statement, run.python, run.error));
    finding.error = run.error;
    result.findings.push_back(std::move(finding));
  }
  for (const LoadedLibrary& library : result.loaded) {
    judge_library(library, context, result.findings);
    judge_version(library, context, result.findings);
  }
  judge_families(result.loaded, context, result.findings);
  judge_static_answer(result.loaded, context, result.findings);
  std::stable_sort(result.findings.begin(), result.findings.end(),
                   [](const ProbeFinding& a, const ProbeFinding& b) {
                     return std::tie(a.severity, a.kind) < std::tie(b.severity, b.kind);
                   });
  result.run = std::move(run);
  return result;
}

bool ProbeResult::has_problems(Strict strict) const {
  return std::any_of(findings.begin(), findings.end(), [strict](const ProbeFinding& finding) {
    return strict == Strict::yes || finding.severity == Severity::problem;
  });
}

}  // namespace venvfix::verify
