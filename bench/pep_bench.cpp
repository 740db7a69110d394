// The pep module's hot paths: parsing and comparing versions, specifier checks, marker parsing
// and evaluation, requirement parsing. bench/pep_compare.py runs this next to the same work
// in Python `packaging` and prints both per operation.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

#include "venvfix/pep/marker.hpp"
#include "venvfix/pep/requirement.hpp"
#include "venvfix/pep/specifier.hpp"
#include "venvfix/pep/version.hpp"

namespace {

using namespace venvfix::pep;

// Keep in sync with bench/pep_compare.py.
const std::vector<std::string> k_versions = {
    "2.8.0+cu128", "9.10.2.21", "12.8.93",    "1.0",    "1.0.post1", "2.0rc1",
    "1!2.0",       "13.0.2",    "0.8.0.dev3", "2.27.3", "3.12.3",    "1.26.4",
};
const std::string k_specifier = ">=2.0,<3,!=2.5.*";
const std::string k_marker = R"(platform_system == "Linux" and platform_machine == "x86_64")";
const std::string k_marker_complex =
    R"(python_version >= "3.9" and (sys_platform == "linux" or sys_platform == "darwin") and extra == "cuda")";
const std::string k_requirement =
    R"(nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux" and platform_machine == "x86_64")";

std::vector<Version> parsed_versions() {
  std::vector<Version> out;
  out.reserve(k_versions.size());
  for (const auto& s : k_versions) out.push_back(*Version::parse(s));
  return out;
}

MarkerEnvironment environment() {
  MarkerEnvironment env =
      marker_environment_for(TargetPython{3, 12, "cp", "x86_64", {{2, 36}}, {}, "3.12.3"});
  env.platform_release = "6.1.0";
  env.platform_version = "#1 SMP";
  return env;
}

void BM_VersionParse(benchmark::State& state) {
  std::size_t i = 0;
  for (auto _ : state) {
    auto v = Version::parse(k_versions[i++ % k_versions.size()]);
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_VersionParse);

void BM_VersionCompare(benchmark::State& state) {
  const auto versions = parsed_versions();
  // The same pairs as the Python side: (v[i], v[i + 5]).
  std::vector<std::pair<const Version*, const Version*>> pairs;
  for (std::size_t i = 0; i < versions.size(); ++i) {
    pairs.emplace_back(&versions[i], &versions[(i + 5) % versions.size()]);
  }
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& [a, b] = pairs[i];
    i = i + 1 == pairs.size() ? 0 : i + 1;
    benchmark::DoNotOptimize(*a < *b);
  }
}
BENCHMARK(BM_VersionCompare);

void BM_VersionSort1000(benchmark::State& state) {
  std::vector<Version> input;
  input.reserve(1000);
  for (int i = 0; i < 1000; ++i) {
    input.push_back(*Version::parse(std::to_string(i % 7) + "." + std::to_string(i % 13) + "." +
                                    std::to_string(i)));
  }
  // Sorts references, as Python's sorted() does with a list of Version objects.
  std::vector<const Version*> refs;
  refs.reserve(input.size());
  for (const auto& v : input) refs.push_back(&v);
  for (auto _ : state) {
    auto copy = refs;
    std::sort(copy.begin(), copy.end(), [](const Version* a, const Version* b) { return *a < *b; });
    benchmark::DoNotOptimize(copy.data());
  }
}
BENCHMARK(BM_VersionSort1000);

void BM_SpecifierContains(benchmark::State& state) {
  const auto set = *SpecifierSet::parse(k_specifier);
  const auto versions = parsed_versions();
  std::size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(set.contains(versions[i++ % versions.size()]));
}
BENCHMARK(BM_SpecifierContains);

void BM_MarkerParse(benchmark::State& state) {
  for (auto _ : state) {
    auto m = Marker::parse(k_marker);
    benchmark::DoNotOptimize(m);
  }
}
BENCHMARK(BM_MarkerParse);

void BM_MarkerEvaluate(benchmark::State& state) {
  const auto marker = *Marker::parse(k_marker);
  const auto env = environment();
  for (auto _ : state) benchmark::DoNotOptimize(marker.evaluate(env));
}
BENCHMARK(BM_MarkerEvaluate);

void BM_MarkerEvaluateComplex(benchmark::State& state) {
  const auto marker = *Marker::parse(k_marker_complex);
  const auto env = environment();
  const std::set<std::string> extras = {"cuda"};
  for (auto _ : state) benchmark::DoNotOptimize(marker.evaluate(env, extras));
}
BENCHMARK(BM_MarkerEvaluateComplex);

void BM_RequirementParse(benchmark::State& state) {
  for (auto _ : state) {
    auto r = Requirement::parse(k_requirement);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_RequirementParse);

}  // namespace
