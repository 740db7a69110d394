// Reading installed distributions: discovery, the per-distribution reads (two threads), the
// ownership map.
#include "venvfix/dist/inventory.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <unordered_map>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/parallel.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/pep/name.hpp"

namespace venvfix::dist {

namespace {

constexpr std::size_t k_max_metadata_bytes = 16u << 20;
constexpr std::size_t k_max_record_bytes = 64u << 20;

struct Found {
  fs::path site_packages;
  fs::path metadata_dir;
  bool egg_info = false;
  bool is_directory = true;
};

// "torch-2.8.0+cu128.dist-info" -> {"torch", "2.8.0+cu128"}; "foo.egg-info" -> {"foo", ""};
// "foo-1.0-py3.12.egg-info" -> {"foo", "1.0"}.
std::pair<std::string, std::string> split_directory_name(std::string_view stem) {
  std::size_t dash = stem.find('-');
  if (dash == std::string_view::npos) return {std::string(stem), ""};
  std::string_view version = stem.substr(dash + 1);
  if (std::size_t second = version.find('-'); second != std::string_view::npos) {
    version = version.substr(0, second);
  }
  return {std::string(stem.substr(0, dash)), std::string(version)};
}

// A natural order for versions as strings ("1.10" after "1.9"), good enough to sort a listing;
// PEP 440 ordering belongs to pep::Version.
bool natural_less(std::string_view a, std::string_view b) {
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    bool da = a[i] >= '0' && a[i] <= '9';
    bool db = b[j] >= '0' && b[j] <= '9';
    if (da && db) {
      std::size_t ei = i;
      std::size_t ej = j;
      while (ei < a.size() && a[ei] >= '0' && a[ei] <= '9') ++ei;
      while (ej < b.size() && b[ej] >= '0' && b[ej] <= '9') ++ej;
      std::string_view na = a.substr(i, ei - i);
      std::string_view nb = b.substr(j, ej - j);
      while (na.size() > 1 && na.front() == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb.front() == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

// Why a file could not be read: missing (no such file) or unreadable (anything else).
MetadataFileState unread_state(const fs::path& file) {
  struct stat st {};
  return ::lstat(file.c_str(), &st) != 0 && errno == ENOENT ? MetadataFileState::missing
                                                            : MetadataFileState::unreadable;
}

bool blank(std::string_view text) {
  return trim(text).empty();
}

MetadataFileState read_metadata_file(Distribution& dist, const fs::path& file) {
  auto text = read_file(file, k_max_metadata_bytes);
  if (!text) {
    dist.problems.push_back(fmt::format("cannot read {}: {}", file.string(), text.error().message));
    return unread_state(file);
  }
  if (blank(*text)) {
    dist.problems.push_back(fmt::format("{} is empty", file.string()));
    return MetadataFileState::empty;
  }
  auto parsed = parse_metadata(*text, file.string());
  if (!parsed) {
    dist.problems.push_back(parsed.error().message);
    return MetadataFileState::invalid;
  }
  dist.metadata = std::move(*parsed);
  return MetadataFileState::ok;
}

MetadataFileState read_record_file(Distribution& dist, const fs::path& record_path) {
  auto record_text = read_file(record_path, k_max_record_bytes);
  if (!record_text) {
    dist.problems.push_back(fmt::format("cannot read {}: {}; its files are unknown",
                                        record_path.string(), record_text.error().message));
    return unread_state(record_path);
  }
  RecordParse parsed = parse_record_lenient(*record_text, record_path.string());
  dist.record = std::move(parsed.entries);
  for (auto& problem : parsed.problems) dist.problems.push_back(std::move(problem));
  if (!dist.record.empty()) return MetadataFileState::ok;
  dist.problems.push_back(fmt::format("{} lists no files", record_path.string()));
  return blank(*record_text) ? MetadataFileState::empty : MetadataFileState::invalid;
}

Distribution read_one(const Found& found) {
  Distribution dist;
  dist.site_packages = found.site_packages;
  dist.metadata_dir = found.metadata_dir;
  dist.legacy_egg_info = found.egg_info;
  std::string stem = found.metadata_dir.stem().string();
  auto [dir_name, dir_version] = split_directory_name(stem);
  dist.directory_name = dir_name;
  dist.directory_version = dir_version;

  if (found.egg_info) {
    read_metadata_file(dist,
                       found.is_directory ? found.metadata_dir / "PKG-INFO" : found.metadata_dir);
  } else {
    dist.metadata_state = read_metadata_file(dist, found.metadata_dir / "METADATA");
    dist.record_state = read_record_file(dist, found.metadata_dir / "RECORD");
    if (auto installer = read_file(found.metadata_dir / "INSTALLER", 4096)) {
      dist.installer = std::string(trim(split(*installer, '\n').front()));
    }
  }

  dist.name = dist.metadata.name.empty() ? dir_name : dist.metadata.name;
  dist.version = dist.metadata.version.empty() ? dir_version : dist.metadata.version;
  dist.normalized_name = pep::normalize_name(dist.name);
  if (!dist.metadata.name.empty() && pep::normalize_name(dir_name) != dist.normalized_name) {
    dist.problems.push_back(fmt::format("{} holds the metadata of '{}'",
                                        found.metadata_dir.string(), dist.metadata.name));
  }
  return dist;
}

Result<std::vector<Found>> discover(const env::Venv& venv) {
  std::vector<Found> found;
  for (const fs::path& site : venv.site_packages) {
    std::error_code ec;
    fs::directory_iterator it(site, ec);
    if (ec) {
      return make_error(ExitCode::error, "cannot list {}: {}", site.string(), ec.message());
    }
    for (fs::directory_iterator end; it != end; it.increment(ec)) {
      if (ec) {
        return make_error(ExitCode::error, "cannot list {}: {}", site.string(), ec.message());
      }
      const fs::path& path = it->path();
      std::string name = path.filename().string();
      bool dist_info = name.ends_with(".dist-info");
      bool egg_info = name.ends_with(".egg-info");
      if ((!dist_info && !egg_info) || name.starts_with('~')) continue;
      std::error_code type_error;
      bool is_directory = it->is_directory(type_error);
      if (dist_info && !is_directory) continue;
      found.push_back(Found{site, path, egg_info, is_directory});
    }
  }
  return found;
}

}  // namespace

namespace {
// True when joining needs no normalisation: relative, no "", "." or ".." segment.
bool is_plain_relative(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.back() == '/') return false;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = path.find('/', start);
    std::string_view segment =
        path.substr(start, end == std::string_view::npos ? end : end - start);
    if (segment.empty() || segment == "." || segment == "..") return false;
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}
}  // namespace

std::string resolve_record_path(const fs::path& site_packages, std::string_view record_path) {
  const std::string& site = site_packages.native();
  if (is_plain_relative(record_path) && is_plain_relative(std::string_view(site).substr(1)) &&
      site.front() == '/') {
    std::string out;
    out.reserve(site.size() + 1 + record_path.size());
    out += site;
    out += '/';
    out += record_path;
    return out;
  }
  std::vector<std::string_view> stack;
  std::string_view base = record_path.starts_with('/') ? std::string_view() : site;
  auto push_segments = [&stack](std::string_view text) {
    for (std::string_view segment : split(text, '/')) {
      if (segment.empty() || segment == ".") continue;
      if (segment == "..") {
        if (!stack.empty()) stack.pop_back();
        continue;
      }
      stack.push_back(segment);
    }
  };
  push_segments(base);
  push_segments(record_path);
  std::string out;
  out.reserve(base.size() + record_path.size() + 1);
  for (std::string_view segment : stack) {
    out += '/';
    out += segment;
  }
  if (out.empty()) out.push_back('/');
  return out;
}

const Distribution* Inventory::find(std::string_view name) const {
  std::string wanted = pep::normalize_name(name);
  for (const Distribution& dist : distributions) {
    if (dist.normalized_name == wanted) return &dist;
  }
  return nullptr;
}

std::vector<std::size_t> Inventory::owners_of(const fs::path& path) const {
  std::error_code ec;
  fs::path absolute = path.is_absolute() ? path : fs::absolute(path, ec);
  auto id = paths.find(resolve_record_path("/", absolute.string()));
  if (!id) return {};
  std::span<const std::uint32_t> owners = owners_of(*id);
  return std::vector<std::size_t>(owners.begin(), owners.end());
}

Status Inventory::index_paths() {
  std::size_t rows = 0;
  std::size_t bytes = 0;
  for (const Distribution& dist : distributions) {
    rows += dist.record.size();
    for (const RecordEntry& entry : dist.record) {
      bytes += dist.site_packages.native().size() + 1 + entry.path.size();
    }
  }
  paths = PathTable();
  paths.reserve(rows, bytes);
  // Pass 1: intern every row's path; count each path's owners (distributions are visited in
  // index order, so a repeated owner is always the last one counted).
  std::vector<std::uint32_t> count;
  std::vector<std::uint32_t> last_owner;
  count.reserve(rows);
  last_owner.reserve(rows);
  std::string joined;  // reused: most rows are site-packages + '/' + a plain relative path
  for (std::size_t d = 0; d < distributions.size(); ++d) {
    Distribution& dist = distributions[d];
    dist.record_path_ids.clear();
    dist.record_path_ids.reserve(dist.record.size());
    const std::string& site = dist.site_packages.native();
    const bool plain_site =
        site.starts_with('/') && is_plain_relative(std::string_view(site).substr(1));
    for (const RecordEntry& entry : dist.record) {
      if (plain_site && is_plain_relative(entry.path)) {
        joined.assign(site).append(1, '/').append(entry.path);
      } else {
        joined = resolve_record_path(dist.site_packages, entry.path);
      }
      std::optional<PathTable::Id> interned = paths.intern(joined);
      if (!interned) {
        return make_error(ExitCode::error, "the RECORDs of this venv list more than {} paths",
                          PathTable::max_paths);
      }
      const PathTable::Id id = *interned;
      dist.record_path_ids.push_back(id);
      if (id == count.size()) {
        count.push_back(0);
        last_owner.push_back(UINT32_MAX);
      }
      if (last_owner[id] != d) {
        last_owner[id] = static_cast<std::uint32_t>(d);
        ++count[id];
      }
    }
  }
  // Pass 2: lay the owners out flat.
  m_owner_starts.assign(paths.size() + 1, 0);
  for (std::size_t i = 0; i < paths.size(); ++i)
    m_owner_starts[i + 1] = m_owner_starts[i] + count[i];
  m_owners.assign(m_owner_starts.back(), 0);
  std::vector<std::uint32_t> filled(m_owner_starts.begin(), m_owner_starts.end() - 1);
  std::fill(last_owner.begin(), last_owner.end(), UINT32_MAX);
  for (std::size_t d = 0; d < distributions.size(); ++d) {
    for (PathTable::Id id : distributions[d].record_path_ids) {
      if (last_owner[id] == d) continue;
      last_owner[id] = static_cast<std::uint32_t>(d);
      m_owners[filled[id]++] = static_cast<std::uint32_t>(d);
    }
  }
  return ok();
}

namespace {

// Every distribution found, each from `take(found)` where it gives one, else read.
Result<Inventory> read_found(const env::Venv& venv,
                             const std::function<std::optional<Distribution>(const Found&)>& take) {
  VENVFIX_TRY_ASSIGN(std::vector<Found> found, discover(venv));
  Inventory inventory;
  inventory.distributions.resize(found.size());
  // Two workers: the reads are small files, the parse is CPU; more threads buy nothing on the
  // 2-core machines this targets and cost start-up time.
  // read_one cannot fail: an unreadable distribution is data (its problems), not an error.
  (void)run_parallel(found.size(), found.size() > 8 ? 2 : 1, [&](std::size_t i, const JobContext&) {
    std::optional<Distribution> taken = take ? take(found[i]) : std::nullopt;
    inventory.distributions[i] = taken ? std::move(*taken) : read_one(found[i]);
    return ok();
  });
  std::stable_sort(inventory.distributions.begin(), inventory.distributions.end(),
                   [](const Distribution& a, const Distribution& b) {
                     if (a.normalized_name != b.normalized_name) {
                       return a.normalized_name < b.normalized_name;
                     }
                     return natural_less(a.version, b.version);
                   });
  VENVFIX_TRY(inventory.index_paths());
  return inventory;
}

}  // namespace

Result<Inventory> read_inventory(const env::Venv& venv) {
  return read_found(venv, {});
}

Result<Inventory> read_inventory(const env::Venv& venv, Inventory& earlier,
                                 const std::function<bool(const fs::path&)>& unchanged) {
  std::unordered_map<std::string, Distribution*> by_path;
  for (Distribution& dist : earlier.distributions)
    by_path.emplace(dist.metadata_dir.native(), &dist);
  // Each found path takes at most the one distribution of that path: no two threads touch the
  // same one.
  return read_found(venv, [&](const Found& found) -> std::optional<Distribution> {
    auto it = by_path.find(found.metadata_dir.native());
    if (it == by_path.end() || it->second->legacy_egg_info != found.egg_info ||
        it->second->site_packages != found.site_packages || !unchanged(found.metadata_dir)) {
      return std::nullopt;
    }
    return std::move(*it->second);
  });
}

}  // namespace venvfix::dist
