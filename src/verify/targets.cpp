#include <algorithm>
#include <cctype>

#include "steps.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/dist/scan.hpp"
#include "venvfix/elf/elf_file.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/pep/version.hpp"

namespace venvfix::verify {

bool looks_like_shared_object(std::string_view path) {
  std::size_t slash = path.rfind('/');
  return dist::looks_like_shared_object(slash == std::string_view::npos ? path
                                                                        : path.substr(slash + 1));
}

std::string dist_label(const dist::Distribution& dist) {
  return fmt::format("{} {}", dist.normalized_name, dist.version);
}

namespace {

std::vector<fs::path> elf_objects_of(const dist::Distribution& dist) {
  std::vector<fs::path> objects;
  for (const dist::RecordEntry& entry : dist.record) {
    if (!looks_like_shared_object(entry.path)) continue;
    fs::path path = (dist.site_packages / entry.path).lexically_normal();
    if (elf::has_elf_magic(path)) objects.push_back(std::move(path));
  }
  std::sort(objects.begin(), objects.end());
  return objects;
}

// "+cu128" → 12, "+cu130" → 13, "+cu118" → 11; 0 when the local label names no CUDA build.
int cuda_major_from_local(std::string_view local) {
  for (std::string_view part : split(local, '.')) {
    if (!part.starts_with("cu") || part.size() < 4) continue;
    std::string_view digits = part.substr(2);
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    // The last digit is the minor version: cu128 is CUDA 12.8, cu92 would be 9.2.
    return std::stoi(std::string(digits.substr(0, digits.size() - 1)));
  }
  return 0;
}

// torch/version.py holds `cuda: Optional[str] = '12.8'` (or `cuda = None` on CPU builds).
std::string cuda_version_from_version_py(const fs::path& version_py) {
  auto text = read_file(version_py, 1u << 20);
  if (!text) return {};
  for (std::string_view line : split(*text, '\n')) {
    line = trim(line);
    if (!line.starts_with("cuda")) continue;
    std::string_view rest = line.substr(4);
    if (!rest.empty() &&
        (std::isalnum(static_cast<unsigned char>(rest.front())) || rest.front() == '_')) {
      continue;  // another name, e.g. cuda_version
    }
    std::size_t equals = rest.find('=');
    if (equals == std::string_view::npos) continue;
    std::string_view value = trim(rest.substr(equals + 1));
    if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') &&
        value.back() == value.front()) {
      return std::string(value.substr(1, value.size() - 2));
    }
    return {};
  }
  return {};
}

void describe_cuda(Target& target, const dist::Distribution& dist) {
  fs::path version_py = dist.site_packages / dist.normalized_name / "version.py";
  target.cuda_version = cuda_version_from_version_py(version_py);
  if (!target.cuda_version.empty()) {
    std::string_view major = split(target.cuda_version, '.').front();
    if (!major.empty() &&
        std::all_of(major.begin(), major.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      target.cuda_major = std::stoi(std::string(major));
      return;
    }
  }
  auto version = pep::Version::parse(dist.version);
  if (version) target.cuda_major = cuda_major_from_local(version->local());
}

}  // namespace

Status select_targets(Analysis& analysis, const Options& options) {
  const auto& distributions = analysis.inventory.distributions;
  std::vector<std::size_t> chosen;
  if (!options.targets.empty()) {
    for (const std::string& name : options.targets) {
      const dist::Distribution* dist = analysis.inventory.find(name);
      if (dist == nullptr) {
        return make_error(ExitCode::usage, "target '{}' is not installed in {}", name,
                          analysis.venv.root.string());
      }
      chosen.push_back(static_cast<std::size_t>(dist - distributions.data()));
    }
  } else if (const dist::Distribution* torch = analysis.inventory.find("torch")) {
    chosen.push_back(static_cast<std::size_t>(torch - distributions.data()));
  } else {
    for (std::size_t i = 0; i < distributions.size(); ++i) {
      if (std::any_of(
              distributions[i].record.begin(), distributions[i].record.end(),
              [&](const dist::RecordEntry& e) { return looks_like_shared_object(e.path); })) {
        chosen.push_back(i);
      }
    }
  }
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());

  for (std::size_t index : chosen) {
    Target target;
    target.dist = index;
    target.elf_objects = elf_objects_of(distributions[index]);
    // Without --target, a distribution is a target only if its shared objects are real ELF.
    if (target.elf_objects.empty() && options.targets.empty() &&
        distributions[index].normalized_name != "torch") {
      continue;
    }
    describe_cuda(target, distributions[index]);
    analysis.needed[index] = true;
    analysis.targets.push_back(std::move(target));
  }
  return ok();
}

}  // namespace venvfix::verify
