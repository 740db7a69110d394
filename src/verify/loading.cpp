#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "steps.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/elf/elf_file.hpp"
#include "venvfix/pep/version.hpp"
#include "venvfix/verify/torch_preload.hpp"

namespace venvfix::verify {

namespace {

// The last component of a RECORD path (fs::path::filename without building a path: every
// RECORD row of the venv goes through here).
std::string_view record_file_name(std::string_view record_path) {
  return record_path.substr(record_path.rfind('/') + 1);
}

std::vector<std::string> sorted_listing(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// What a loaded venv object loads with dlopen by bare soname (cuDNN's sub-libraries): the
// manifest release matching the installed version of the distribution whose RECORD owns it.
// The set changes with the version (cuDNN 9.21 added libcudnn_engines_tensor_ir.so.9).
// `path`: lexically normal.
std::vector<std::string> dlopens_of(const Analysis& analysis, const manifest::Manifests& manifests,
                                    const fs::path& path, const std::string& soname) {
  for (std::size_t owner : analysis.inventory.owners_of(path)) {
    const dist::Distribution& dist = analysis.inventory.distributions[owner];
    const manifest::Distribution* known = manifests.find_distribution(dist.normalized_name);
    if (known == nullptr) continue;
    auto version = pep::Version::parse(dist.version);
    if (!version) continue;
    const manifest::Release* release = known->release_for(*version);
    if (release == nullptr) continue;
    if (const manifest::Library* library = release->find_library(soname)) return library->dlopens;
  }
  return {};
}

std::optional<fs::path> venv_executable(const env::Venv& venv) {
  for (const char* name : {"bin/python3", "bin/python"}) {
    fs::path candidate = venv.root / name;
    if (elf::has_elf_magic(candidate)) return candidate;
  }
  return std::nullopt;
}

// A soname that a venv distribution should provide: one a RECORD lists (a ghost owner
// included), or one the manifests say a wheel of a target's CUDA major ships.
bool venv_should_provide(const Analysis& analysis, const manifest::Manifests& manifests,
                         const std::set<std::string>& record_sonames, const std::string& soname) {
  if (record_sonames.count(soname)) return true;
  return std::any_of(analysis.targets.begin(), analysis.targets.end(), [&](const Target& t) {
    return t.cuda_major != 0 && !manifests.providers_of(soname, t.cuda_major).empty();
  });
}

// One way torch may load its libraries: what is opened (ctypes.CDLL, in order) before the
// first object of torch._C.
struct LoadWay {
  std::string label;  // empty for a target whose loading holds no assumption
  std::vector<fs::path> opened_first;
};

struct Observation {
  bool fails = false;
  elf::Resolution resolution;
};

// One (consumer, soname) pair across the ways: what each way saw of it.
struct UseRecord {
  fs::path consumer;
  bool dlopen = false;
  std::map<std::size_t, Observation> by_way;  // way index -> the worst answer of any root
};

class UseCollector {
 public:
  UseCollector(Analysis& analysis, const manifest::Manifests& manifests,
               const elf::SystemView& system, std::shared_ptr<elf::ElfSource> source)
      : m_analysis(analysis),
        m_manifests(manifests),
        m_resolver(system, std::move(source), venv_executable(analysis.venv)) {
    for (const dist::Distribution& dist : analysis.inventory.distributions) {
      for (const dist::RecordEntry& entry : dist.record) {
        if (looks_like_shared_object(entry.path)) {
          m_record_sonames.emplace(record_file_name(entry.path));
        }
      }
    }
  }

  const std::set<std::string>& record_sonames() const { return m_record_sonames; }

  void collect_target(const Target& target) {
    for (const LoadWay& way : ways_for(target)) {
      std::size_t index = m_way_labels.size();
      m_way_labels.push_back(way.label);
      for (const fs::path& file : way.opened_first) m_opened.insert(file.lexically_normal());
      collect_way(target, way, index);
    }
  }

  // The uses, one per (consumer, soname), each with the resolution of a way where it loads.
  std::vector<SonameUse> uses() const;
  const std::set<fs::path>& opened() const { return m_opened; }

 private:
  std::vector<LoadWay> ways_for(const Target& target);
  bool loads_cleanly(const fs::path& root);
  void collect_way(const Target& target, const LoadWay& way, std::size_t index);
  void collect_graph(elf::LoadGraph& graph, std::size_t way, std::set<fs::path>& reached);
  // `consumer`: a lexically normal path inside the environment (callers check it once per
  // object; the system's own needs are not ours).
  void observe(const fs::path& consumer, const elf::Resolution& resolution, bool dlopen,
               std::size_t way);
  bool fails(const elf::Resolution& resolution);
  // path.lexically_normal(), remembered: the same objects come back for every root.
  const fs::path& normal(const fs::path& path);

  Analysis& m_analysis;
  const manifest::Manifests& m_manifests;
  elf::Resolver m_resolver;
  std::set<std::string> m_record_sonames;
  std::map<fs::path, std::vector<std::string>> m_listings;
  std::vector<std::string> m_way_labels;
  std::map<std::pair<std::string, std::string>, UseRecord> m_records;
  std::set<fs::path> m_opened;
  std::unordered_map<std::string, fs::path> m_normal;
};

// A Python extension module, which the interpreter opens by path itself; other libraries are
// reached as their dependencies (and may rely on an RPATH inherited from them).
bool is_extension_module(const fs::path& path) {
  std::string name = path.filename().string();
  if (!name.ends_with(".so")) return false;
  return name.find(".cpython-") != std::string::npos || name.ends_with(".abi3.so") ||
         !name.starts_with("lib");
}

bool UseCollector::loads_cleanly(const fs::path& root) {
  auto graph = m_resolver.load(root);
  if (!graph) return false;
  for (const auto& [object, need] : graph->unresolved()) {
    if (m_manifests.system_provider(need->soname) != manifest::Provider::driver) return false;
  }
  return true;
}

std::vector<LoadWay> UseCollector::ways_for(const Target& target) {
  DirectoryListing listing = [&](const fs::path& dir) -> const std::vector<std::string>& {
    auto [it, inserted] = m_listings.try_emplace(dir);
    if (inserted) it->second = sorted_listing(dir);
    return it->second;
  };
  const dist::Distribution& dist = m_analysis.inventory.distributions[target.dist];
  if (dist.normalized_name != "torch" || target.cuda_major == 0) return {LoadWay{}};
  std::optional<fs::path> global_deps;
  for (const fs::path& object : target.elf_objects) {
    if (object.filename() == "libtorch_global_deps.so") global_deps = object;
  }
  PreloadChoice choice = preload_choice(m_analysis, target, m_manifests);
  manifest::PreloadWay whole;
  whole.whole_table = true;
  if (global_deps && !loads_cleanly(*global_deps)) {
    // torch preloads its whole table on OSError, then opens libtorch_global_deps.so again.
    LoadWay way{
        "libtorch_global_deps.so fails to load, so torch preloads its whole table",
        torch_preload_files(m_analysis, target, m_manifests, listing, whole, choice.exclude)};
    way.opened_first.push_back(*global_deps);
    return {way};
  }
  const std::vector<manifest::PreloadWay>& on_success = choice.on_success;
  std::vector<LoadWay> ways;
  std::vector<std::string> labels;
  for (const manifest::PreloadWay& candidate : on_success) {
    LoadWay way;
    way.label = fmt::format("torch preloads {} after import", describe(candidate));
    if (global_deps) way.opened_first.push_back(*global_deps);
    for (fs::path& file :
         torch_preload_files(m_analysis, target, m_manifests, listing, candidate, choice.exclude)) {
      way.opened_first.push_back(std::move(file));
    }
    labels.push_back(way.label);
    auto same = std::find_if(ways.begin(), ways.end(), [&](const LoadWay& other) {
      return other.opened_first == way.opened_first;
    });
    if (same == ways.end()) ways.push_back(std::move(way));
  }
  if (on_success.size() > 1) {
    m_analysis.assumptions.push_back(fmt::format(
        "{}: {}, which does not establish what it preloads after libtorch_global_deps.so "
        "loads, so every way was resolved ({}); a soname counts as unresolved only when it "
        "fails on all of them, and `venvfix doctor --probe` shows what really loads",
        dist_label(dist), choice.basis, join(labels, "; ")));
  }
  if (ways.size() == 1 && on_success.size() == 1) ways.front().label.clear();
  return ways;
}

void UseCollector::collect_way(const Target& target, const LoadWay& way, std::size_t index) {
  std::set<fs::path> reached;
  auto load_root = [&](const fs::path& root) {
    auto graph = m_resolver.load(root, way.opened_first);
    if (!graph) {
      spdlog::warn("cannot follow the libraries of {}: {}", root.string(), graph.error().message);
      return;
    }
    collect_graph(*graph, index, reached);
  };
  // What Python opens itself comes first; a library that none of those reaches is judged as
  // its own root (something may open it by path).
  for (const fs::path& root : target.elf_objects) {
    if (is_extension_module(root)) load_root(root);
  }
  for (const fs::path& root : target.elf_objects) {
    if (!is_extension_module(root) && reached.count(root.lexically_normal()) == 0) load_root(root);
  }
}

void UseCollector::collect_graph(elf::LoadGraph& graph, std::size_t way,
                                 std::set<fs::path>& reached) {
  // What an object dlopens joins the graph with its own closure, so this loop also walks the
  // needs of cuDNN's sub-libraries. (Objects are appended: no reference into the vector is
  // held across a dlopen.)
  for (std::size_t i = 0; i < graph.objects.size(); ++i) {
    if (graph.objects[i].reason == elf::LoadReason::main_program ||
        graph.objects[i].reason == elf::LoadReason::interpreter) {
      continue;
    }
    const fs::path& path = normal(graph.objects[i].path);
    reached.insert(path);
    const bool ours = inside_environment(m_analysis.venv, path);  // not the system's own needs
    if (ours) {
      for (const elf::Resolution& need : graph.objects[i].needs) observe(path, need, false, way);
    }
    std::shared_ptr<const elf::ElfInfo> info = graph.objects[i].info;
    if (info == nullptr || info->soname.empty()) continue;
    for (const std::string& soname : dlopens_of(m_analysis, m_manifests, path, info->soname)) {
      elf::DlopenResult opened = m_resolver.dlopen(graph, i, soname);
      if (ours) observe(path, opened.resolution, true, way);
    }
  }
}

const fs::path& UseCollector::normal(const fs::path& path) {
  auto [it, fresh] = m_normal.try_emplace(path.native());
  if (fresh) it->second = path.lexically_normal();
  return it->second;
}

bool UseCollector::fails(const elf::Resolution& resolution) {
  if (!resolution.resolved()) return true;
  const fs::path& path = normal(*resolution.path);
  if (inside_environment(m_analysis.venv, path)) return false;
  if (m_manifests.system_provider(resolution.soname)) return false;
  return venv_should_provide(m_analysis, m_manifests, m_record_sonames, resolution.soname);
}

void UseCollector::observe(const fs::path& consumer, const elf::Resolution& resolution, bool dlopen,
                           std::size_t way) {
  auto [slot, first] = m_records.try_emplace({consumer.string(), resolution.soname});
  UseRecord& record = slot->second;
  if (first) record.consumer = consumer;
  record.dlopen = record.dlopen || dlopen;
  const bool failed = fails(resolution);
  // Within one way, every root counts: the worst answer wins (unresolved over escaped). The
  // resolution is copied only when it is kept: most uses repeat for every root.
  auto it = record.by_way.find(way);
  if (it == record.by_way.end()) {
    record.by_way.emplace(way, Observation{failed, resolution});
  } else if (failed && (!it->second.fails || !resolution.resolved())) {
    it->second = Observation{failed, resolution};
  }
}

std::vector<SonameUse> UseCollector::uses() const {
  std::vector<SonameUse> out;
  for (const auto& [key, record] : m_records) {
    const Observation* loads = nullptr;
    const Observation* fails_first = nullptr;
    std::vector<std::string> failing;
    for (const auto& [way, observation] : record.by_way) {
      if (!observation.fails) {
        if (loads == nullptr) loads = &observation;
        continue;
      }
      failing.push_back(m_way_labels[way]);
      bool worse = fails_first == nullptr ||
                   (fails_first->resolution.resolved() && !observation.resolution.resolved());
      if (worse) fails_first = &observation;
    }
    SonameUse use;
    use.soname = key.second;
    use.consumer = record.consumer;
    use.dlopen = record.dlopen;
    use.resolution = (loads != nullptr ? loads : fails_first)->resolution;
    if (loads != nullptr) use.fails_when = std::move(failing);
    out.push_back(std::move(use));
  }
  return out;
}

struct SonameGroup {
  std::set<std::string> needed_by;
  std::set<std::string> resolved_to;
  std::set<std::string> ways;  // on_some_ways: the ways on which it fails
};

std::string consumers_text(const std::vector<std::string>& needed_by) {
  return needed_by.size() > 1
             ? fmt::format("{} and {} more", needed_by.front(), needed_by.size() - 1)
             : needed_by.front();
}

// A distribution whose RECORD owns a soname the targets need is needed, even when its file is
// gone (the ghost case).
void mark_record_owners_needed(Analysis& analysis) {
  std::unordered_set<std::string_view> needed_sonames;
  for (const SonameUse& use : analysis.uses) needed_sonames.insert(use.soname);
  const auto& distributions = analysis.inventory.distributions;
  for (std::size_t i = 0; i < distributions.size(); ++i) {
    for (const dist::RecordEntry& entry : distributions[i].record) {
      if (needed_sonames.count(record_file_name(entry.path))) {
        analysis.needed[i] = true;
        break;
      }
    }
  }
}

void report_unresolved(Analysis& analysis, const manifest::Manifests& manifests,
                       std::map<std::string, SonameGroup>& unresolved) {
  for (auto& [soname, group] : unresolved) {
    Finding finding;
    UnresolvedSoname detail;
    detail.soname = soname;
    detail.needed_by.assign(group.needed_by.begin(), group.needed_by.end());
    std::optional<manifest::Provider> provider = manifests.system_provider(soname);
    finding.severity = Severity::problem;
    std::string consumers = consumers_text(detail.needed_by);
    finding.message =
        fmt::format("{} is needed by {} but the loader finds it nowhere", soname, consumers);
    if (provider == manifest::Provider::driver) {
      // Nothing in the venv can fix a host without the GPU driver: a note, not a finding.
      detail.note = "provided by the GPU driver, which this host lacks; never fetched";
      finding.message =
          fmt::format("{} (needed by {}) is provided by the GPU driver, which this host lacks",
                      soname, consumers);
      finding.detail = std::move(detail);
      analysis.notes.push_back(std::move(finding));
      continue;
    }
    if (provider == manifest::Provider::system) {
      detail.note =
          "provided by the operating system; install it with the system's package manager";
    }
    finding.detail = std::move(detail);
    analysis.findings.push_back(std::move(finding));
  }
}

void report_escaped(Analysis& analysis, std::map<std::string, SonameGroup>& escaped) {
  for (auto& [soname, group] : escaped) {
    EscapedSoname detail;
    detail.soname = soname;
    detail.needed_by.assign(group.needed_by.begin(), group.needed_by.end());
    detail.resolved_to = *group.resolved_to.begin();
    Finding finding;
    finding.severity = Severity::problem;
    finding.message = fmt::format("{} should come from the venv but the loader takes {} for {}",
                                  soname, detail.resolved_to, consumers_text(detail.needed_by));
    finding.detail = std::move(detail);
    analysis.findings.push_back(std::move(finding));
  }
}

// Resolves on one way of loading torch, fails on another: a risk, not a certainty, until
// `doctor --probe` shows which way this torch takes. Sonames with the same consumers and the
// same failing ways (cuDNN's sub-libraries) are one warning.
void report_on_some_ways(Analysis& analysis, std::map<std::string, SonameGroup>& on_some_ways) {
  std::map<std::pair<std::set<std::string>, std::set<std::string>>, std::vector<std::string>>
      grouped;
  for (auto& [soname, group] : on_some_ways)
    grouped[{group.needed_by, group.ways}].push_back(soname);
  for (auto& [key, sonames] : grouped) {
    UnresolvedSoname detail;
    detail.soname = sonames.front();
    if (sonames.size() > 1) detail.sonames = sonames;
    detail.needed_by.assign(key.first.begin(), key.first.end());
    detail.fails_when.assign(key.second.begin(), key.second.end());
    Finding finding;
    finding.severity = Severity::warning;
    std::string names = sonames.size() > 1 ? fmt::format("{} and {} more sonames", sonames.front(),
                                                         sonames.size() - 1)
                                           : sonames.front();
    finding.message = fmt::format(
        "{} (needed by {}) resolve{}, but not when {}; which way torch takes is not known "
        "(`venvfix doctor --probe` shows it)",
        names, consumers_text(detail.needed_by), sonames.size() > 1 ? "" : "s",
        join(detail.fails_when, " or when "));
    finding.detail = std::move(detail);
    analysis.findings.push_back(std::move(finding));
  }
}

}  // namespace

void check_loading(Analysis& analysis, const manifest::Manifests& manifests,
                   const elf::SystemView& system, const std::shared_ptr<elf::ElfSource>& source) {
  std::map<fs::path, std::vector<std::string>> listings;
  analysis.preloaded = torch_preloads(
      analysis, manifests, [&](const fs::path& dir) -> const auto& {
        auto [it, inserted] = listings.try_emplace(dir);
        if (inserted) it->second = sorted_listing(dir);
        return it->second;
      });
  const std::size_t reads_before = source->reads();
  const std::size_t kept_before = source->kept();
  UseCollector collector(analysis, manifests, system, source);
  for (const Target& target : analysis.targets) collector.collect_target(target);
  spdlog::debug("loading: {} ELF paths read, {} taken again as read before (the same stat)",
                source->reads() - reads_before, source->kept() - kept_before);
  analysis.uses = collector.uses();

  std::set<fs::path> loaded(collector.opened().begin(), collector.opened().end());
  for (const Target& target : analysis.targets) {
    loaded.insert(target.elf_objects.begin(), target.elf_objects.end());
  }

  std::map<std::string, SonameGroup> unresolved;
  std::map<std::string, SonameGroup> escaped;
  std::map<std::string, SonameGroup> on_some_ways;
  const fs::path* shown = nullptr;  // uses come grouped by consumer: name each one once
  std::string shown_as;
  for (const SonameUse& use : analysis.uses) {
    if (shown == nullptr || shown->native() != use.consumer.native()) {
      shown = &use.consumer;
      shown_as = analysis.display_path(use.consumer);
    }
    std::string consumer = shown_as;
    if (use.dlopen) consumer += " (dlopen)";
    if (!use.fails_when.empty()) {
      SonameGroup& group = on_some_ways[use.soname];
      group.needed_by.insert(consumer);
      group.ways.insert(use.fails_when.begin(), use.fails_when.end());
    }
    if (!use.resolution.resolved()) {
      unresolved[use.soname].needed_by.insert(consumer);
      continue;
    }
    fs::path path = use.resolution.path->lexically_normal();
    if (inside_environment(analysis.venv, path)) {
      loaded.insert(path);
      for (std::size_t owner : analysis.inventory.owners_of(path)) analysis.needed[owner] = true;
      continue;
    }
    if (manifests.system_provider(use.soname)) continue;
    if (!venv_should_provide(analysis, manifests, collector.record_sonames(), use.soname)) continue;
    SonameGroup& group = escaped[use.soname];
    group.needed_by.insert(consumer);
    group.resolved_to.insert(path.string());
  }
  mark_record_owners_needed(analysis);
  report_unresolved(analysis, manifests, unresolved);
  report_escaped(analysis, escaped);
  report_on_some_ways(analysis, on_some_ways);
  analysis.loaded_libraries.assign(loaded.begin(), loaded.end());
}

}  // namespace venvfix::verify
