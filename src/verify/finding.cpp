#include "venvfix/verify/finding.hpp"

#include <algorithm>
#include <functional>
#include <tuple>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "venvfix/base/json_fields.hpp"

namespace venvfix::verify {

std::string_view to_string(FindingKind kind) {
  switch (kind) {
    case FindingKind::ghost_files:
      return "ghost-files";
    case FindingKind::clobbered_files:
      return "clobbered-files";
    case FindingKind::shared_paths:
      return "shared-paths";
    case FindingKind::unresolved_soname:
      return "unresolved-soname";
    case FindingKind::escaped_soname:
      return "escaped-soname";
    case FindingKind::split_site_packages:
      return "split-site-packages";
    case FindingKind::cuda_mix:
      return "cuda-mix";
    case FindingKind::unmet_requirement:
      return "unmet-requirement";
    case FindingKind::orphan_library:
      return "orphan-library";
    case FindingKind::dist_info:
      return "dist-info";
    case FindingKind::pip_stash:
      return "pip-stash";
  }
  return "unknown";
}

std::string_view to_string(Severity severity) {
  return severity == Severity::problem ? "problem" : "warning";
}

namespace {

// The kind follows from the alternative: the enum and the variant must stay in step.
template <FindingKind K, typename T>
constexpr bool alternative_is =
    std::is_same_v<std::variant_alternative_t<static_cast<std::size_t>(K), Finding::Detail>, T>;
static_assert(std::variant_size_v<Finding::Detail> ==
              static_cast<std::size_t>(FindingKind::pip_stash) + 1);
static_assert(alternative_is<FindingKind::ghost_files, GhostFiles>);
static_assert(alternative_is<FindingKind::clobbered_files, ClobberedFiles>);
static_assert(alternative_is<FindingKind::shared_paths, SharedPaths>);
static_assert(alternative_is<FindingKind::unresolved_soname, UnresolvedSoname>);
static_assert(alternative_is<FindingKind::escaped_soname, EscapedSoname>);
static_assert(alternative_is<FindingKind::split_site_packages, SplitSitePackages>);
static_assert(alternative_is<FindingKind::cuda_mix, CudaMix>);
static_assert(alternative_is<FindingKind::unmet_requirement, UnmetRequirement>);
static_assert(alternative_is<FindingKind::orphan_library, OrphanLibrary>);
static_assert(alternative_is<FindingKind::dist_info, DistInfo>);
static_assert(alternative_is<FindingKind::pip_stash, PipStash>);

// Sets `key` unless the value is empty (the contract leaves empty fields out).
void put(nlohmann::json& out, const char* key, const std::string& value) {
  if (!value.empty()) out[key] = value;
}
void put(nlohmann::json& out, const char* key, const std::vector<std::string>& value) {
  if (!value.empty()) out[key] = value;
}

// The kind's own fields into `out`.
struct DetailWriter {
  nlohmann::json& out;

  void operator()(const GhostFiles& d) const {
    put(out, "missing", d.missing);
    put(out, "mismatched", d.mismatched);
  }
  void operator()(const ClobberedFiles& d) const { put(out, "dists", d.dists); }
  void operator()(const SharedPaths& d) const { put(out, "dists", d.dists); }
  void operator()(const UnresolvedSoname& d) const {
    put(out, "soname", d.soname);
    put(out, "sonames", d.sonames);
    put(out, "needed_by", d.needed_by);
    put(out, "fails_when", d.fails_when);
    put(out, "note", d.note);
  }
  void operator()(const EscapedSoname& d) const {
    put(out, "soname", d.soname);
    put(out, "needed_by", d.needed_by);
    put(out, "resolved_to", d.resolved_to);
  }
  void operator()(const SplitSitePackages& d) const { put(out, "dists", d.dists); }
  void operator()(const CudaMix& d) const {
    put(out, "dists", d.dists);
    put(out, "required_by_installed", d.required_by_installed);
    out["cuda_major"] = d.cuda_major;
    out["target_cuda_major"] = d.target_cuda_major;
    out["conflicts"] = d.conflicts;
    out["breaks"] = d.breaks;
  }
  void operator()(const UnmetRequirement& d) const {
    put(out, "requirement", d.requirement);
    put(out, "required_by", d.required_by);
  }
  void operator()(const OrphanLibrary&) const {}
  void operator()(const DistInfo& d) const { put(out, "anomaly", d.anomaly); }
  void operator()(const PipStash&) const {}
};

Result<int> small_integer(const JsonFields& r, std::string_view key) {
  VENVFIX_TRY_ASSIGN(std::optional<std::int64_t> value, r.integer(key));
  if (*value < 0 || *value > 1000) return r.fail("\"{}\" is {}, not a CUDA major", key, *value);
  return static_cast<int>(*value);
}

Result<Finding::Detail> cuda_mix_of(const JsonFields& r) {
  CudaMix d;
  VENVFIX_TRY_ASSIGN(d.cuda_major, small_integer(r, "cuda_major"));
  VENVFIX_TRY_ASSIGN(d.target_cuda_major, small_integer(r, "target_cuda_major"));
  VENVFIX_TRY_ASSIGN(d.conflicts, r.boolean("conflicts"));
  VENVFIX_TRY_ASSIGN(d.dists, r.strings("dists"));
  VENVFIX_TRY_ASSIGN(d.required_by_installed, r.strings("required_by_installed"));
  VENVFIX_TRY_ASSIGN(d.breaks, r.strings("breaks"));
  return Finding::Detail(std::move(d));
}

Result<Finding::Detail> unresolved_of(const JsonFields& r) {
  UnresolvedSoname d;
  VENVFIX_TRY_ASSIGN(d.soname, r.string("soname"));
  VENVFIX_TRY_ASSIGN(d.sonames, r.strings("sonames"));
  VENVFIX_TRY_ASSIGN(d.needed_by, r.strings("needed_by"));
  VENVFIX_TRY_ASSIGN(d.fails_when, r.strings("fails_when"));
  VENVFIX_TRY_ASSIGN(d.note, r.string("note", Presence::optional));
  return Finding::Detail(std::move(d));
}

Result<Finding::Detail> escaped_of(const JsonFields& r) {
  EscapedSoname d;
  VENVFIX_TRY_ASSIGN(d.soname, r.string("soname"));
  VENVFIX_TRY_ASSIGN(d.needed_by, r.strings("needed_by"));
  VENVFIX_TRY_ASSIGN(d.resolved_to, r.string("resolved_to", Presence::optional));
  return Finding::Detail(std::move(d));
}

// A kind whose own fields are one list of distributions.
template <typename T>
Result<Finding::Detail> dists_of(const JsonFields& r) {
  T d;
  VENVFIX_TRY_ASSIGN(d.dists, r.strings("dists"));
  return Finding::Detail(std::move(d));
}

Result<Finding::Detail> detail_of(FindingKind kind, const JsonFields& r) {
  switch (kind) {
    case FindingKind::ghost_files: {
      GhostFiles d;
      VENVFIX_TRY_ASSIGN(d.missing, r.strings("missing"));
      VENVFIX_TRY_ASSIGN(d.mismatched, r.strings("mismatched"));
      return Finding::Detail(std::move(d));
    }
    case FindingKind::clobbered_files:
      return dists_of<ClobberedFiles>(r);
    case FindingKind::shared_paths:
      return dists_of<SharedPaths>(r);
    case FindingKind::unresolved_soname:
      return unresolved_of(r);
    case FindingKind::escaped_soname:
      return escaped_of(r);
    case FindingKind::split_site_packages:
      return dists_of<SplitSitePackages>(r);
    case FindingKind::cuda_mix:
      return cuda_mix_of(r);
    case FindingKind::unmet_requirement: {
      UnmetRequirement d;
      VENVFIX_TRY_ASSIGN(d.requirement, r.string("requirement"));
      VENVFIX_TRY_ASSIGN(d.required_by, r.string("required_by", Presence::optional));
      return Finding::Detail(std::move(d));
    }
    case FindingKind::orphan_library:
      return Finding::Detail(OrphanLibrary{});
    case FindingKind::dist_info: {
      DistInfo d;
      VENVFIX_TRY_ASSIGN(d.anomaly, r.string("anomaly"));
      return Finding::Detail(std::move(d));
    }
    case FindingKind::pip_stash:
      return Finding::Detail(PipStash{});
  }
  return r.fail("unknown finding kind");
}

Result<FindingKind> kind_of(const JsonFields& r) {
  VENVFIX_TRY_ASSIGN(std::string name, r.string("kind"));
  for (std::size_t i = 0; i < std::variant_size_v<Finding::Detail>; ++i) {
    if (to_string(static_cast<FindingKind>(i)) == name) return static_cast<FindingKind>(i);
  }
  return r.fail("\"kind\" is \"{}\", not a finding kind venvfix knows", name);
}

Result<Severity> severity_of(const JsonFields& r) {
  VENVFIX_TRY_ASSIGN(std::string name, r.string("severity"));
  if (name == "problem") return Severity::problem;
  if (name == "warning") return Severity::warning;
  return r.fail("\"severity\" is \"{}\", not \"problem\" or \"warning\"", name);
}

}  // namespace

std::string_view soname_of(const Finding& finding) {
  if (const auto* unresolved = finding.as<UnresolvedSoname>()) return unresolved->soname;
  if (const auto* escaped = finding.as<EscapedSoname>()) return escaped->soname;
  return {};
}

nlohmann::json to_json(const Finding& finding, SeverityField severity) {
  nlohmann::json out = {{"kind", to_string(finding.kind())}, {"message", finding.message}};
  if (severity == SeverityField::written) out["severity"] = to_string(finding.severity);
  put(out, "dist", finding.dist);
  put(out, "version", finding.version);
  put(out, "paths", finding.paths);
  put(out, "layer", finding.layer);
  std::visit(DetailWriter{out}, finding.detail);
  return out;
}

Result<Finding> finding_from_json(const nlohmann::json& value, const std::string& context,
                                  ExitCode code, SeverityField severity) {
  if (!value.is_object()) return Error{code, context + " is not an object"};
  const JsonFields r(value, context, code);
  Finding finding;
  VENVFIX_TRY_ASSIGN(FindingKind kind, kind_of(r));
  if (severity == SeverityField::written) {
    VENVFIX_TRY_ASSIGN(finding.severity, severity_of(r));
  } else {
    finding.severity = Severity::problem;
  }
  VENVFIX_TRY_ASSIGN(finding.message, r.string("message"));
  VENVFIX_TRY_ASSIGN(finding.dist, r.string("dist", Presence::optional));
  VENVFIX_TRY_ASSIGN(finding.version, r.string("version", Presence::optional));
  VENVFIX_TRY_ASSIGN(finding.paths, r.strings("paths"));
  VENVFIX_TRY_ASSIGN(finding.layer, r.string("layer", Presence::optional));
  VENVFIX_TRY_ASSIGN(finding.detail, detail_of(kind, r));
  return finding;
}

void sort_findings(std::vector<Finding>& findings) {
  auto key = [](const Finding& f) {
    return std::make_tuple(f.severity, f.kind(), std::string_view(f.dist), soname_of(f),
                           std::cref(f.paths), std::string_view(f.message));
  };
  std::stable_sort(findings.begin(), findings.end(),
                   [&](const Finding& a, const Finding& b) { return key(a) < key(b); });
}

}  // namespace venvfix::verify
