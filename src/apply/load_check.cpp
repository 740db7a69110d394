// The loader-rule half of verification: judge_targets and closure_signatures.
#include "venvfix/apply/load_check.hpp"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "venvfix/elf/elf_file.hpp"
#include "venvfix/elf/resolver.hpp"
#include "venvfix/pep/name.hpp"

namespace venvfix::apply {

namespace {

// What the plan says it cannot fix: sonames, and distributions (normalised).
struct Unfixable {
  std::set<std::string> sonames;
  std::set<std::string> dists;
};

Unfixable unfixable_of(const plan::Plan& plan) {
  Unfixable out;
  for (const plan::Unresolved& entry : plan.unresolved) {
    if (std::string_view soname = plan::soname_of(entry); !soname.empty()) {
      out.sonames.emplace(soname);
    }
    if (const std::string& dist = plan::dist_of(entry); !dist.empty()) {
      out.dists.insert(pep::normalize_name(dist));
    }
  }
  return out;
}

}  // namespace

TargetVerdict judge_targets(const verify::Analysis& after, const plan::Plan& plan,
                            const std::set<std::string>& installed) {
  const Unfixable unfixable = unfixable_of(plan);
  TargetVerdict verdict;
  for (const verify::Finding& finding : after.findings) {
    if (finding.severity != verify::Severity::problem) continue;
    bool fails = false;
    switch (finding.kind()) {
      case verify::FindingKind::unresolved_soname:
      case verify::FindingKind::escaped_soname:
        fails = unfixable.sonames.count(std::string(verify::soname_of(finding))) == 0;
        break;
      case verify::FindingKind::ghost_files:
      case verify::FindingKind::clobbered_files: {
        std::string dist = pep::normalize_name(finding.dist);
        fails = installed.count(dist) != 0 && unfixable.dists.count(dist) == 0;
        break;
      }
      default:
        break;
    }
    (fails ? verdict.failures : verdict.remaining).push_back(finding);
  }
  return verdict;
}

std::map<fs::path, std::string> closure_signatures(const verify::Analysis& analysis,
                                                   const elf::SystemView& system) {
  std::optional<fs::path> executable;
  for (const char* name : {"bin/python3", "bin/python"}) {
    fs::path candidate = analysis.venv.root / name;
    if (elf::has_elf_magic(candidate)) {
      executable = candidate;
      break;
    }
  }
  elf::Resolver resolver(system, std::make_shared<elf::ElfSource>(), executable);
  std::map<fs::path, std::string> out;
  for (const verify::Target& target : analysis.targets) {
    for (const fs::path& root : target.elf_objects) {
      auto graph = resolver.load(root, analysis.preloaded);
      if (!graph) {
        out[root] = "error: " + graph.error().message;
        continue;
      }
      std::vector<std::string> parts;
      for (const elf::LoadedObject& object : graph->objects) {
        if (object.reason == elf::LoadReason::main_program ||
            object.reason == elf::LoadReason::interpreter) {
          continue;
        }
        parts.push_back(fmt::format("{} {}:{}", object.path.lexically_normal().string(),
                                    object.device, object.inode));
        for (const elf::Resolution& need : object.needs) {
          if (!need.resolved()) parts.push_back("unresolved " + need.soname);
        }
      }
      std::sort(parts.begin(), parts.end());
      std::string signature;
      for (const std::string& part : parts) signature += part + "\n";
      out[root] = std::move(signature);
    }
  }
  return out;
}

}  // namespace venvfix::apply
