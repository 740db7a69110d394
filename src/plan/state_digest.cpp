// The state digest: what the plan was made from, so `apply` can refuse a venv that changed
// since (exit 7). Every field is length-prefixed, so no two different states can give the
// same byte stream.
#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "venvfix/base/sha256.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/plan/planner.hpp"

namespace venvfix::plan {

namespace {

class Stream {
 public:
  Stream& field(std::string_view text) {
    auto length = fmt::format_int(text.size());
    m_hash.update(std::string_view(length.data(), length.size()));
    m_hash.update(std::string_view(":"));
    m_hash.update(text);
    return *this;
  }
  void end() { m_hash.update(std::string_view("\n")); }
  std::string hex() { return to_hex(m_hash.finish()); }

 private:
  Sha256 m_hash;
};

std::string relative_to(const fs::path& path, const fs::path& root) {
  return path.lexically_normal().lexically_relative(root).generic_string();
}

// A distribution's part of the state: name, version, dist-info directory, Requires-Dist and
// every RECORD row.
void stream_distribution(Stream& stream, const dist::Distribution& dist, const std::string& dir) {
  stream.field("dist").field(dist.normalized_name).field(dist.version).field(dir).end();
  for (const std::string& line : dist.metadata.requires_dist) {
    stream.field("requires").field(line).end();
  }
  for (const dist::RecordEntry& entry : dist.record) {
    // The raw digest bytes (no hex per row: a torch venv has 30,000 rows).
    std::string_view hash =
        entry.sha256 ? std::string_view(reinterpret_cast<const char*>(entry.sha256->data()),
                                        entry.sha256->size())
                     : std::string_view(entry.hash_value);
    stream.field("record")
        .field(entry.path)
        .field(entry.sha256 ? std::string_view("sha256") : std::string_view(entry.hash_algorithm))
        .field(hash);
    if (entry.size) {
      stream.field(fmt::format_int(*entry.size).str());
    } else {
      stream.field("-");
    }
    stream.end();
  }
}

// What the file checks saw, sorted (the findings' order depends on their severity, which
// depends on the loader's view of the host; the digest must not). Each line starts with its
// kind and the distribution it is about.
std::vector<std::vector<std::string>> file_lines(const verify::Analysis& analysis) {
  std::vector<std::vector<std::string>> files;
  for (const verify::Finding& finding : analysis.findings) {
    if (const auto* ghost = finding.as<verify::GhostFiles>()) {
      for (const std::string& path : ghost->missing)
        files.push_back({"missing", finding.dist, path});
      for (const std::string& path : ghost->mismatched) {
        files.push_back({"mismatched", finding.dist, path});
      }
    } else if (const auto* clobbered = finding.as<verify::ClobberedFiles>()) {
      for (const std::string& path : finding.paths) {
        std::vector<std::string> line = {"clobbered", finding.dist, path};
        line.insert(line.end(), clobbered->dists.begin(), clobbered->dists.end());
        files.push_back(std::move(line));
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The distributions in a stable order (name, version, directory) with their directories.
std::vector<std::pair<std::size_t, std::string>> sorted_distributions(
    const verify::Analysis& analysis) {
  const auto& distributions = analysis.inventory.distributions;
  std::vector<std::pair<std::size_t, std::string>> order;
  for (std::size_t i = 0; i < distributions.size(); ++i) {
    order.emplace_back(i, relative_to(distributions[i].metadata_dir, analysis.venv.root));
  }
  std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    return std::tie(distributions[a.first].normalized_name, distributions[a.first].version,
                    a.second) < std::tie(distributions[b.first].normalized_name,
                                         distributions[b.first].version, b.second);
  });
  return order;
}

std::string label(const DistState& state) {
  return state.dist + " " + state.version;
}

}  // namespace

std::string state_digest(const verify::Analysis& analysis) {
  Stream stream;
  stream.field("venvfix-state/1").end();
  for (const fs::path& site : analysis.venv.site_packages) {
    stream.field("site").field(relative_to(site, analysis.venv.root)).end();
  }
  for (const auto& [index, dir] : sorted_distributions(analysis)) {
    stream_distribution(stream, analysis.inventory.distributions[index], dir);
  }
  for (const auto& line : file_lines(analysis)) {
    for (const std::string& part : line) stream.field(part);
    stream.end();
  }
  return stream.hex();
}

std::vector<DistState> state_by_distribution(const verify::Analysis& analysis) {
  const std::vector<std::vector<std::string>> files = file_lines(analysis);
  std::vector<DistState> out;
  for (const auto& [index, dir] : sorted_distributions(analysis)) {
    const dist::Distribution& dist = analysis.inventory.distributions[index];
    Stream stream;
    stream_distribution(stream, dist, dir);
    for (const auto& line : files) {
      if (line[1] != dist.metadata.name && line[1] != dist.normalized_name) continue;
      for (const std::string& part : line) stream.field(part);
      stream.end();
    }
    out.push_back({dist.normalized_name, dist.version, stream.hex().substr(0, 16)});
  }
  return out;
}

std::string describe_drift(const std::vector<DistState>& planned,
                           const std::vector<DistState>& now) {
  std::map<std::string, std::vector<const DistState*>> before;
  std::map<std::string, std::vector<const DistState*>> after;
  for (const DistState& state : planned) before[state.dist].push_back(&state);
  for (const DistState& state : now) after[state.dist].push_back(&state);
  std::vector<std::string> parts;
  for (const auto& [name, states] : before) {
    const auto found = after.find(name);
    if (found == after.end()) {
      parts.push_back(label(*states.front()) + " is gone");
    } else if (states.size() == 1 && found->second.size() == 1 &&
               states.front()->version != found->second.front()->version) {
      parts.push_back(
          fmt::format("{} is {} now", label(*states.front()), found->second.front()->version));
    } else if (!std::equal(states.begin(), states.end(), found->second.begin(), found->second.end(),
                           [](const DistState* a, const DistState* b) {
                             return a->version == b->version && a->digest == b->digest;
                           })) {
      parts.push_back(label(*states.front()) + " changed (its RECORD, metadata or files differ)");
    }
  }
  for (const auto& [name, states] : after) {
    if (!before.contains(name)) parts.push_back(label(*states.front()) + " was added");
  }
  if (parts.empty()) return "its site-packages directories differ";
  return join(parts, "; ");
}

}  // namespace venvfix::plan
