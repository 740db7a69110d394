// The state digest: what the plan was made from, so `apply` can refuse a venv that changed
// since (exit 7). Every field is length-prefixed, so no two different states can give the
// same byte stream.
#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "venvfix/base/sha256.hpp"
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

}  // namespace

std::string state_digest(const verify::Analysis& analysis) {
  const fs::path& root = analysis.venv.root;
  Stream stream;
  stream.field("venvfix-state/1").end();
  for (const fs::path& site : analysis.venv.site_packages) {
    stream.field("site").field(relative_to(site, root)).end();
  }

  const auto& distributions = analysis.inventory.distributions;
  std::vector<std::size_t> order(distributions.size());
  std::vector<std::string> dirs(distributions.size());
  for (std::size_t i = 0; i < distributions.size(); ++i) {
    order[i] = i;
    dirs[i] = relative_to(distributions[i].metadata_dir, root);
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(distributions[a].normalized_name, distributions[a].version, dirs[a]) <
           std::tie(distributions[b].normalized_name, distributions[b].version, dirs[b]);
  });
  for (std::size_t index : order) {
    const dist::Distribution& dist = distributions[index];
    stream.field("dist").field(dist.normalized_name).field(dist.version).field(dirs[index]).end();
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
  // depends on the loader's view of the host; the digest must not).
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
  for (const auto& line : files) {
    for (const std::string& part : line) stream.field(part);
    stream.end();
  }
  return stream.hex();
}

}  // namespace venvfix::plan
