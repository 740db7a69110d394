#include "venvfix/verify/why.hpp"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "steps.hpp"

namespace venvfix::verify {

namespace {

std::string explain(const Analysis& analysis, const elf::Resolution& resolution) {
  if (!resolution.resolved()) {
    // ld.so tries each directory once however many RPATHs name it; list each once too.
    std::vector<std::string> dirs;
    std::set<std::string> seen;
    for (const fs::path& dir : resolution.searched) {
      std::string display = analysis.display_path(dir);
      if (seen.insert(display).second) dirs.push_back(std::move(display));
    }
    std::string where = dirs.empty() ? std::string("no directory") : join(dirs, ", ");
    return fmt::format("not found: the loader searched {}{}{}", where,
                       resolution.searched_cache ? ", and the loader cache" : "",
                       resolution.error.empty() ? "" : fmt::format(" ({})", resolution.error));
  }
  std::string path = analysis.display_path(*resolution.path);
  switch (resolution.step) {
    case elf::SearchStep::already_loaded:
      return fmt::format("bound to {}, already loaded (torch's preload or an earlier DT_NEEDED)",
                         path);
    case elf::SearchStep::rpath:
    case elf::SearchStep::runpath:
      return fmt::format("found at {} through the {} entry '{}'", path,
                         resolution.step == elf::SearchStep::rpath ? "DT_RPATH" : "DT_RUNPATH",
                         resolution.via_entry);
    case elf::SearchStep::ld_library_path:
      return fmt::format("found at {} through the LD_LIBRARY_PATH entry '{}'", path,
                         resolution.via_entry);
    case elf::SearchStep::ld_cache:
      return fmt::format("found at {} through the loader cache (/etc/ld.so.cache)", path);
    case elf::SearchStep::default_dir:
      return fmt::format("found at {} in a default directory of the loader", path);
    case elf::SearchStep::direct_path:
      return fmt::format("opened by path: {}", path);
  }
  return path;
}

}  // namespace

WhyReport explain_soname(const Analysis& analysis, const manifest::Manifests& manifests,
                         const std::string& soname) {
  WhyReport report;
  report.soname = soname;
  report.system_provider = manifests.system_provider(soname);
  for (const SonameUse& use : analysis.uses) {
    if (use.soname != soname) continue;
    SonameConsumer consumer;
    consumer.consumer = analysis.display_path(use.consumer);
    consumer.dlopen = use.dlopen;
    consumer.resolution = use.resolution;
    consumer.explanation = explain(analysis, use.resolution);
    consumer.fails_when = use.fails_when;
    report.consumers.push_back(std::move(consumer));
  }
  for (std::size_t i = 0; i < analysis.inventory.distributions.size(); ++i) {
    std::vector<std::string> taken = removal_breaks(analysis, i).sonames;
    if (std::binary_search(taken.begin(), taken.end(), soname)) {
      report.removal_takes.push_back(analysis.inventory.distributions[i].normalized_name);
    }
  }
  for (const dist::Distribution& dist : analysis.inventory.distributions) {
    for (const dist::RecordEntry& entry : dist.record) {
      if (fs::path(entry.path).filename() != soname) continue;
      fs::path path = (dist.site_packages / entry.path).lexically_normal();
      std::error_code error;
      report.providers.push_back({dist.normalized_name, dist.version, analysis.display_path(path),
                                  fs::exists(path, error)});
    }
  }
  std::set<std::string> wheels;
  for (const Target& target : analysis.targets) {
    for (const manifest::Distribution* provider :
         manifests.providers_of(soname, target.cuda_major)) {
      wheels.insert(provider->name);
    }
  }
  report.manifest_providers.assign(wheels.begin(), wheels.end());
  return report;
}

nlohmann::json why_json(const Analysis& analysis, const WhyReport& report) {
  nlohmann::json consumers = nlohmann::json::array();
  for (const SonameConsumer& c : report.consumers) {
    nlohmann::json entry = {{"consumer", c.consumer},
                            {"dlopen", c.dlopen},
                            {"found", c.resolution.resolved()},
                            {"explanation", c.explanation}};
    if (c.resolution.resolved()) {
      entry["resolved_to"] = c.resolution.path->lexically_normal().string();
      entry["how"] = elf::search_step_name(c.resolution.step);
      if (!c.resolution.via_entry.empty()) entry["entry"] = c.resolution.via_entry;
    } else {
      std::vector<std::string> searched;
      for (const fs::path& dir : c.resolution.searched) searched.push_back(dir.string());
      entry["searched"] = searched;
      entry["searched_cache"] = c.resolution.searched_cache;
      if (!c.resolution.error.empty()) entry["error"] = c.resolution.error;
    }
    if (!c.fails_when.empty()) entry["fails_when"] = c.fails_when;
    consumers.push_back(std::move(entry));
  }
  nlohmann::json providers = nlohmann::json::array();
  for (const SonameProvider& p : report.providers) {
    providers.push_back(
        {{"dist", p.dist}, {"version", p.version}, {"path", p.path}, {"present", p.present}});
  }
  nlohmann::json out = {{"schema", "venvfix-why/1"},
                        {"venv", analysis.venv.root.string()},
                        {"soname", report.soname},
                        {"targets", analysis.target_list()},
                        {"needed_by", std::move(consumers)},
                        {"providers", std::move(providers)},
                        {"wheels", report.manifest_providers},
                        {"removal_takes", report.removal_takes}};
  if (report.system_provider) {
    out["provided_by"] =
        *report.system_provider == manifest::Provider::driver ? "driver" : "system";
  }
  return out;
}

void print_why_report(const Analysis& analysis, const WhyReport& report, std::ostream& out,
                      Colors colors) {
  const char* bold = colors == Colors::on ? "\033[1m" : "";
  const char* reset = colors == Colors::on ? "\033[0m" : "";
  const char* red = colors == Colors::on ? "\033[31m" : "";
  const char* green = colors == Colors::on ? "\033[32m" : "";
  out << bold << report.soname << reset << "\n\n";
  if (report.system_provider) {
    out << "Provided by the "
        << (*report.system_provider == manifest::Provider::driver ? "GPU driver" : "system")
        << "; venvfix never fetches it.\n\n";
  }
  out << bold << "Needed by" << reset << "\n";
  if (report.consumers.empty()) {
    out << "  nothing the targets (" << analysis.target_names() << ") load\n";
  }
  for (const SonameConsumer& c : report.consumers) {
    out << "  " << (c.resolution.resolved() ? green : red)
        << (c.resolution.resolved() ? "✓ " : "✗ ") << reset << c.consumer
        << (c.dlopen ? " (dlopen)" : "") << "\n      " << c.explanation << "\n";
    if (!c.fails_when.empty()) {
      out << "      but not when " << join(c.fails_when, " or when ") << "\n";
    }
  }
  out << "\n" << bold << "Provided by" << reset << "\n";
  if (report.providers.empty()) out << "  no installed distribution's RECORD lists it\n";
  for (const SonameProvider& p : report.providers) {
    out << "  " << p.dist << " " << p.version << ": " << p.path
        << (p.present ? "" : "  (listed in RECORD, file missing)") << "\n";
  }
  if (!report.removal_takes.empty()) {
    out << "\n"
        << bold << "Removing any of these the way pip does would take it" << reset << "\n  "
        << join(report.removal_takes, ", ") << "\n";
  }
  if (!report.manifest_providers.empty()) {
    out << "\n"
        << bold << "Wheels that ship it" << reset << " (for the targets' CUDA major)\n  "
        << join(report.manifest_providers, ", ") << "\n";
  }
}

}  // namespace venvfix::verify
