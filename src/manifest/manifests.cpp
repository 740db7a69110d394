#include "venvfix/manifest/manifests.hpp"

#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "venvfix/base/json_fields.hpp"
#include "venvfix/pep/name.hpp"

namespace venvfix::manifest {

using nlohmann::json;

namespace {

constexpr std::string_view k_nvidia_schema = "venvfix-manifest-nvidia/1";
constexpr std::string_view k_system_schema = "venvfix-manifest-system/1";
constexpr std::string_view k_torch_schema = "venvfix-manifest-torch/1";

// Reads typed fields out of one JSON object, remembering where it is for error messages.
// A manifest object's fields; errors are ExitCode::error (the data shipped with venvfix).
class Reader : public JsonFields {
 public:
  Reader(const json& node, std::string where)
      : JsonFields(node, std::move(where), ExitCode::error) {}
  const std::string& where() const { return context(); }
};

Result<json> parse_json(std::string_view text, std::string_view name) {
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) {
    return make_error(ExitCode::error, "{}: not a valid JSON object", name);
  }
  return document;
}

// A file's "updated" date, checked for its form; "" when the file has none (test manifests).
Result<std::string> updated_date(const json& document, std::string_view name) {
  const JsonFields fields(document, std::string(name), ExitCode::error);
  VENVFIX_TRY_ASSIGN(std::string date, fields.string("updated", Presence::optional));
  const bool well_formed = date.size() == 10 && date[4] == '-' && date[7] == '-' &&
                           std::all_of(date.begin(), date.end(),
                                       [](char c) { return c == '-' || (c >= '0' && c <= '9'); });
  if (!date.empty() && !well_formed)
    return fields.fail("\"updated\" must be YYYY-MM-DD, not {}", date);
  return date;
}

Status check_schema(const json& document, std::string_view name, std::string_view expected) {
  auto it = document.find("schema");
  if (it == document.end() || !it->is_string() || it->get<std::string>() != expected) {
    return make_error(ExitCode::error, "{}: \"schema\" must be \"{}\"", name, expected);
  }
  return ok();
}

Result<Library> read_library(const Reader& r) {
  Library library;
  VENVFIX_TRY_ASSIGN(library.soname, r.string("soname"));
  VENVFIX_TRY_ASSIGN(library.file, r.string("file", Presence::optional));
  if (library.file.empty()) library.file = library.soname;
  if (library.soname.empty() || library.soname.find('/') != std::string::npos ||
      library.file.find('/') != std::string::npos) {
    return r.fail("\"soname\" and \"file\" must be plain file names");
  }
  VENVFIX_TRY_ASSIGN(library.needed, r.strings("needed"));
  VENVFIX_TRY_ASSIGN(library.rpath, r.string("rpath", Presence::optional));
  VENVFIX_TRY_ASSIGN(library.runpath, r.string("runpath", Presence::optional));
  VENVFIX_TRY_ASSIGN(library.dlopens, r.strings("dlopens"));
  return library;
}

Result<Release> read_release(const Reader& r, bool meta) {
  Release release;
  VENVFIX_TRY_ASSIGN(release.versions, r.string("versions"));
  auto specifier = pep::SpecifierSet::parse(release.versions);
  if (!specifier) {
    return r.fail("\"versions\" is not a valid specifier set: {}", specifier.error().message);
  }
  release.specifier = std::move(specifier).value();
  VENVFIX_TRY_ASSIGN(release.source, r.string("source", Presence::optional));
  VENVFIX_TRY_ASSIGN(release.requires_dist, r.strings("requires"));
  VENVFIX_TRY_ASSIGN(const json* libraries,
                     r.array("libraries", meta ? Presence::optional : Presence::required));
  for (std::size_t i = 0; i < libraries->size(); ++i) {
    Reader lr((*libraries)[i], fmt::format("{} libraries[{}]", r.where(), i));
    VENVFIX_TRY_ASSIGN(Library library, read_library(lr));
    release.libraries.push_back(std::move(library));
  }
  return release;
}

Status read_extras(const json& node, const Reader& r, Release& release) {
  auto it = node.find("extras");
  if (it == node.end()) return ok();
  if (!it->is_object()) return r.fail("\"extras\" must be an object of strings");
  for (const auto& [extra, requirement] : it->items()) {
    if (!requirement.is_string()) return r.fail("\"extras.{}\" must be a string", extra);
    release.extras[pep::normalize_name(extra)] = requirement.get<std::string>();
  }
  return ok();
}

// "placeholders": [{"name": "nvidia-cublas-cu13", "source": "..."}]
Status read_placeholders(const Reader& r, Distribution& distribution) {
  VENVFIX_TRY_ASSIGN(const json* entries, r.array("placeholders", Presence::optional));
  for (std::size_t k = 0; k < entries->size(); ++k) {
    const json& entry = (*entries)[k];
    if (!entry.is_object()) return r.fail("placeholders[{}] must be an object", k);
    Reader pr(entry, fmt::format("{} placeholders[{}]", r.where(), k));
    VENVFIX_TRY_ASSIGN(std::string placeholder, pr.string("name"));
    VENVFIX_TRY(pr.string("source"));
    if (!pep::is_valid_name(placeholder)) {
      return pr.fail("\"{}\" is not a valid project name", placeholder);
    }
    distribution.placeholders.push_back(pep::normalize_name(placeholder));
  }
  return ok();
}

Status load_nvidia(const json& document, std::string_view name,
                   std::vector<Distribution>& distributions) {
  VENVFIX_TRY(check_schema(document, name, k_nvidia_schema));
  Reader root(document, std::string(name));
  VENVFIX_TRY_ASSIGN(const json* entries, root.array("distributions"));
  for (std::size_t i = 0; i < entries->size(); ++i) {
    const json& node = (*entries)[i];
    if (!node.is_object()) return root.fail("distributions[{}] must be an object", i);
    std::string label = node.contains("name") && node["name"].is_string()
                            ? node["name"].get<std::string>()
                            : std::string("?");
    Reader r(node, fmt::format("{}: distributions[{}] ({})", name, i, label));
    Distribution distribution;
    VENVFIX_TRY_ASSIGN(std::string raw_name, r.string("name"));
    if (!pep::is_valid_name(raw_name))
      return r.fail("\"{}\" is not a valid project name", raw_name);
    distribution.name = pep::normalize_name(raw_name);
    distribution.meta = node.value("meta", false);
    auto major = node.find("cuda_major");
    if (major != node.end()) {
      if (!major->is_number_integer()) return r.fail("\"cuda_major\" must be an integer");
      distribution.cuda_major = major->get<int>();
    } else if (!distribution.meta) {
      return r.fail("\"cuda_major\" is missing");
    }
    VENVFIX_TRY_ASSIGN(
        distribution.lib_dir,
        r.string("lib_dir", distribution.meta ? Presence::optional : Presence::required));
    if (distribution.lib_dir.starts_with('/') ||
        distribution.lib_dir.find("..") != std::string::npos) {
      return r.fail("\"lib_dir\" must be a relative path inside site-packages");
    }
    VENVFIX_TRY_ASSIGN(distribution.preload_folder, r.string("preload_folder", Presence::optional));
    VENVFIX_TRY_ASSIGN(distribution.source, r.string("source"));
    VENVFIX_TRY(read_placeholders(r, distribution));
    VENVFIX_TRY_ASSIGN(const json* releases, r.array("releases"));
    for (std::size_t k = 0; k < releases->size(); ++k) {
      const json& release_node = (*releases)[k];
      if (!release_node.is_object()) return r.fail("releases[{}] must be an object", k);
      Reader rr(release_node, fmt::format("{} releases[{}]", r.where(), k));
      VENVFIX_TRY_ASSIGN(Release release, read_release(rr, distribution.meta));
      VENVFIX_TRY(read_extras(release_node, rr, release));
      distribution.releases.push_back(std::move(release));
    }
    auto duplicate =
        std::find_if(distributions.begin(), distributions.end(),
                     [&](const Distribution& d) { return d.name == distribution.name; });
    if (duplicate != distributions.end())
      return r.fail("\"{}\" is listed twice", distribution.name);
    distributions.push_back(std::move(distribution));
  }
  return ok();
}

// A way is "all" (the whole table) or an array of library folders.
Result<PreloadWay> read_preload_way(const json& node, const std::string& where) {
  PreloadWay way;
  if (node.is_string() && node.get<std::string>() == "all") {
    way.whole_table = true;
    return way;
  }
  bool folders = node.is_array() && std::all_of(node.begin(), node.end(),
                                                [](const json& item) { return item.is_string(); });
  if (!folders) {
    return Error{ExitCode::error,
                 fmt::format("{}: a way must be \"all\" or an array of library folders", where)};
  }
  for (const json& item : node) way.folders.push_back(item.get<std::string>());
  return way;
}

Result<PreloadRule> read_preload_rule(const Reader& r) {
  PreloadRule rule;
  VENVFIX_TRY_ASSIGN(rule.torch, r.string("torch"));
  auto versions = pep::SpecifierSet::parse(rule.torch);
  if (!versions) {
    return r.fail("\"torch\" is not a valid specifier set: {}", versions.error().message);
  }
  rule.versions = std::move(versions).value();
  VENVFIX_TRY_ASSIGN(rule.source, r.string("source"));
  VENVFIX_TRY_ASSIGN(rule.exclude, r.strings("exclude"));
  VENVFIX_TRY_ASSIGN(const json* ways, r.array("on_success"));
  if (ways->empty()) return r.fail("\"on_success\" must name at least one way");
  for (std::size_t i = 0; i < ways->size(); ++i) {
    VENVFIX_TRY_ASSIGN(PreloadWay way, read_preload_way((*ways)[i], fmt::format("{} on_success[{}]",
                                                                                r.where(), i)));
    rule.on_success.push_back(std::move(way));
  }
  return rule;
}

Result<std::vector<PreloadRule>> parse_preload_rules(const Reader& preload) {
  std::vector<PreloadRule> rules;
  VENVFIX_TRY_ASSIGN(const json* nodes, preload.array("rules"));
  for (std::size_t i = 0; i < nodes->size(); ++i) {
    const json& node = (*nodes)[i];
    Reader r(node, fmt::format("torch.json: preload.rules[{}]", i));
    if (!node.is_object()) return r.fail("must be an object");
    VENVFIX_TRY_ASSIGN(PreloadRule rule, read_preload_rule(r));
    rules.push_back(std::move(rule));
  }
  return rules;
}

// What each listed build preloads after a successful load, where recorded.
Result<std::vector<TorchBuild>> parse_torch_builds(const json& torch) {
  std::vector<TorchBuild> builds;
  VENVFIX_TRY_ASSIGN(const json* nodes,
                     Reader(torch, "torch.json").array("builds", Presence::optional));
  for (std::size_t i = 0; i < nodes->size(); ++i) {
    const json& node = (*nodes)[i];
    Reader r(node, fmt::format("torch.json: builds[{}]", i));
    if (!node.is_object()) return r.fail("must be an object");
    TorchBuild build;
    VENVFIX_TRY_ASSIGN(build.version, r.string("version"));
    VENVFIX_TRY_ASSIGN(build.exclude, r.strings("preload_exclude"));
    build.pypi_default = node.value("pypi_default", false);
    if (auto way = node.find("preload_on_success"); way != node.end()) {
      VENVFIX_TRY_ASSIGN(build.on_success,
                         read_preload_way(*way, r.where() + " preload_on_success"));
    }
    builds.push_back(std::move(build));
  }
  return builds;
}

Result<Provider> parse_provider(const Reader& r) {
  VENVFIX_TRY_ASSIGN(std::string provider, r.string("provider"));
  if (provider == "system") return Provider::system;
  if (provider == "driver") return Provider::driver;
  return r.fail("\"provider\" must be \"system\" or \"driver\", not \"{}\"", provider);
}

}  // namespace

const Library* Release::find_library(std::string_view soname) const {
  for (const Library& library : libraries) {
    if (library.soname == soname) return &library;
  }
  return nullptr;
}

const TorchBuild* TorchPreload::find_build(std::string_view version) const {
  for (const TorchBuild& build : builds) {
    if (build.version == version) return &build;
  }
  if (version.find('+') != std::string_view::npos) return nullptr;
  for (const TorchBuild& build : builds) {
    std::string_view public_part =
        std::string_view(build.version).substr(0, build.version.find('+'));
    if (build.pypi_default && public_part == version) return &build;
  }
  return nullptr;
}

const PreloadRule* TorchPreload::rule_for(const pep::Version& torch_version) const {
  for (const PreloadRule& rule : rules) {
    if (rule.versions.contains(torch_version, pep::PreReleases::allow)) return &rule;
  }
  return nullptr;
}

const Release* Distribution::release_for(const pep::Version& version) const {
  for (const Release& release : releases) {
    if (release.specifier.contains(version, pep::PreReleases::allow)) return &release;
  }
  return nullptr;
}

bool Distribution::provides(std::string_view soname) const {
  return std::any_of(releases.begin(), releases.end(),
                     [&](const Release& r) { return r.find_library(soname) != nullptr; });
}

Result<Manifests> Manifests::from_text(std::string_view nvidia_json, std::string_view system_json,
                                       std::string_view torch_json) {
  Manifests manifests;
  VENVFIX_TRY_ASSIGN(json nvidia, parse_json(nvidia_json, "nvidia-wheels.json"));
  VENVFIX_TRY(load_nvidia(nvidia, "nvidia-wheels.json", manifests.m_distributions));

  VENVFIX_TRY_ASSIGN(json system, parse_json(system_json, "system-libraries.json"));
  VENVFIX_TRY(check_schema(system, "system-libraries.json", k_system_schema));
  Reader system_root(system, "system-libraries.json");
  VENVFIX_TRY_ASSIGN(const json* libraries, system_root.array("libraries"));
  for (std::size_t i = 0; i < libraries->size(); ++i) {
    Reader r((*libraries)[i], fmt::format("system-libraries.json: libraries[{}]", i));
    if (!(*libraries)[i].is_object()) return r.fail("must be an object");
    SystemLibrary library;
    VENVFIX_TRY_ASSIGN(library.soname, r.string("soname"));
    VENVFIX_TRY_ASSIGN(library.provider, parse_provider(r));
    VENVFIX_TRY_ASSIGN(library.source, r.string("source"));
    manifests.m_system_libraries.push_back(std::move(library));
  }
  VENVFIX_TRY_ASSIGN(const json* patterns, system_root.array("patterns", Presence::optional));
  for (std::size_t i = 0; i < patterns->size(); ++i) {
    Reader r((*patterns)[i], fmt::format("system-libraries.json: patterns[{}]", i));
    if (!(*patterns)[i].is_object()) return r.fail("must be an object");
    VENVFIX_TRY_ASSIGN(std::string glob, r.string("glob"));
    VENVFIX_TRY_ASSIGN(Provider provider, parse_provider(r));
    manifests.m_system_globs.push_back(std::move(glob));
    manifests.m_system_glob_providers.push_back(provider);
  }

  VENVFIX_TRY_ASSIGN(json torch, parse_json(torch_json, "torch.json"));
  VENVFIX_TRY(check_schema(torch, "torch.json", k_torch_schema));
  auto preload = torch.find("preload");
  if (preload == torch.end() || !preload->is_object()) {
    return make_error(ExitCode::error, "torch.json: \"preload\" is missing or not an object");
  }
  Reader pr(*preload, "torch.json: preload");
  VENVFIX_TRY_ASSIGN(manifests.m_torch_preload.search, pr.strings("search"));
  VENVFIX_TRY_ASSIGN(manifests.m_torch_preload.source, pr.string("source"));
  VENVFIX_TRY_ASSIGN(const json* preload_libraries, pr.array("libraries"));
  for (std::size_t i = 0; i < preload_libraries->size(); ++i) {
    const json& node = (*preload_libraries)[i];
    Reader r(node, fmt::format("torch.json: preload.libraries[{}]", i));
    if (!node.is_object()) return r.fail("must be an object");
    PreloadLibrary library;
    VENVFIX_TRY_ASSIGN(library.folder, r.string("folder"));
    VENVFIX_TRY_ASSIGN(library.globs, r.strings("globs"));
    if (library.globs.empty()) return r.fail("\"globs\" must not be empty");
    library.required = node.value("required", true);
    manifests.m_torch_preload.libraries.push_back(std::move(library));
  }
  VENVFIX_TRY_ASSIGN(manifests.m_torch_preload.rules, parse_preload_rules(pr));
  VENVFIX_TRY_ASSIGN(manifests.m_torch_preload.builds, parse_torch_builds(torch));
  const std::array<std::pair<const json*, std::string_view>, 3> files{
      {{&nvidia, "nvidia-wheels.json"},
       {&system, "system-libraries.json"},
       {&torch, "torch.json"}}};
  for (const auto& [document, name] : files) {
    VENVFIX_TRY_ASSIGN(std::string date, updated_date(*document, name));
    manifests.m_updated = std::max(manifests.m_updated, date);  // ISO dates sort as text
  }
  return manifests;
}

Result<Manifests> Manifests::load(const fs::path& dir) {
  auto read = [&](std::string_view file) -> Result<std::string> {
    auto text = read_file(dir / file, 16u << 20);
    if (!text) {
      return make_error(ExitCode::error, "cannot read manifest {}: {}", (dir / file).string(),
                        text.error().message);
    }
    return std::move(text).value();
  };
  VENVFIX_TRY_ASSIGN(std::string nvidia, read("nvidia-wheels.json"));
  VENVFIX_TRY_ASSIGN(std::string system, read("system-libraries.json"));
  VENVFIX_TRY_ASSIGN(std::string torch, read("torch.json"));
  auto manifests = from_text(nvidia, system, torch);
  if (!manifests) {
    return make_error(ExitCode::error, "invalid manifest in {}: {}", dir.string(),
                      manifests.error().message);
  }
  return manifests;
}

fs::path Manifests::default_dir() {
  if (const char* env = std::getenv("VENVFIX_MANIFEST_DIR"); env != nullptr && *env) {
    return env;
  }
  std::error_code error;
  fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    fs::path installed = exe.parent_path().parent_path() / "share/venvfix/manifests";
    if (fs::exists(installed / "nvidia-wheels.json", error)) return installed;
  }
#ifdef VENVFIX_MANIFEST_DIR
  return VENVFIX_MANIFEST_DIR;
#else
  return "manifests";
#endif
}

const Distribution* Manifests::find_distribution(std::string_view name) const {
  std::string normalized = pep::normalize_name(name);
  for (const Distribution& distribution : m_distributions) {
    if (distribution.name == normalized) return &distribution;
  }
  return nullptr;
}

const Distribution* Manifests::placeholder_of(std::string_view name) const {
  std::string normalized = pep::normalize_name(name);
  for (const Distribution& distribution : m_distributions) {
    if (std::find(distribution.placeholders.begin(), distribution.placeholders.end(), normalized) !=
        distribution.placeholders.end()) {
      return &distribution;
    }
  }
  return nullptr;
}

std::vector<const Distribution*> Manifests::providers_of(std::string_view soname,
                                                         int cuda_major) const {
  std::vector<const Distribution*> out;
  for (const Distribution& distribution : m_distributions) {
    if (cuda_major != 0 && distribution.cuda_major != cuda_major) continue;
    if (distribution.provides(soname)) out.push_back(&distribution);
  }
  return out;
}

std::optional<Provider> Manifests::system_provider(std::string_view soname) const {
  for (const SystemLibrary& library : m_system_libraries) {
    if (library.soname == soname) return library.provider;
  }
  std::string name(soname);
  for (std::size_t i = 0; i < m_system_globs.size(); ++i) {
    if (::fnmatch(m_system_globs[i].c_str(), name.c_str(), 0) == 0) {
      return m_system_glob_providers[i];
    }
  }
  return std::nullopt;
}

}  // namespace venvfix::manifest
