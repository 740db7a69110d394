#include "venvfix/dist/record.hpp"

#include <charconv>

#include "venvfix/base/strings.hpp"
#include "venvfix/base/utf8.hpp"
#include "venvfix/dist/csv.hpp"

namespace venvfix::dist {

namespace {

constexpr std::size_t k_max_path_bytes = 4096;

bool is_algorithm_name(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

bool is_base64url(std::string_view text) {
  for (char c : text) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '=';
    if (!ok) return false;
  }
  return !text.empty();
}

class RowReader {
 public:
  RowReader(std::string_view source, RecordParse& out) : m_source(source), m_out(out) {}

  void read(std::size_t line, const std::vector<std::string>& fields, bool unterminated_quote) {
    std::string_view path = fields[0];
    if (path.empty()) return problem(line, "has an empty path; row ignored");
    if (path.find('\0') != std::string_view::npos) {
      return problem(line, "has a NUL byte in its path; row ignored");
    }
    if (path.size() > k_max_path_bytes) {
      return problem(line, fmt::format("has a path of {} bytes (more than {}); row ignored",
                                       path.size(), k_max_path_bytes));
    }
    if (!is_valid_utf8(path)) {
      return problem(line, fmt::format("has a path that is not UTF-8 ({}); row ignored",
                                       printable_excerpt(path)));
    }
    RecordEntry entry;
    entry.path = std::string(path);
    entry.line = line;
    if (unterminated_quote) problem(line, "ends inside a quoted field");
    if (fields.size() != 3) {
      problem(line, fmt::format("has {} fields instead of 3 (path,hash,size); kept the path "
                                "{} without hash and size",
                                fields.size(), printable_excerpt(path)));
      m_out.entries.push_back(std::move(entry));
      return;
    }
    read_hash(line, fields[1], entry);
    read_size(line, fields[2], entry);
    m_out.entries.push_back(std::move(entry));
  }

 private:
  void problem(std::size_t line, std::string_view what) {
    m_out.problems.push_back(fmt::format("{} line {} {}", m_source, line, what));
  }

  void read_hash(std::size_t line, std::string_view text, RecordEntry& entry) {
    if (text.empty()) return;  // RECORD itself, .pyc files: legal
    std::size_t equals = text.find('=');
    std::string_view algorithm = equals == std::string_view::npos ? "" : text.substr(0, equals);
    std::string_view value = equals == std::string_view::npos ? "" : text.substr(equals + 1);
    if (algorithm == "sha256") {
      // Nearly every row: one pass over the digest (a well-formed one is valid base64url).
      if (auto digest = sha256_from_base64url(value)) {
        entry.sha256 = *digest;
        entry.hash_algorithm = "sha256";
        return;
      }
    }
    if (!is_algorithm_name(algorithm) || !is_base64url(value)) {
      return problem(line, fmt::format("has a malformed hash '{}' (expected algorithm=digest); "
                                       "hash ignored for {}",
                                       printable_excerpt(text), printable_excerpt(entry.path)));
    }
    if (algorithm == "sha256") {
      auto digest = sha256_from_base64url(value);
      if (!digest) {
        return problem(line, fmt::format("has a malformed sha256 digest '{}'; hash ignored for {}",
                                         printable_excerpt(value), printable_excerpt(entry.path)));
      }
      entry.sha256 = *digest;
      entry.hash_algorithm = "sha256";
      return;
    }
    entry.hash_algorithm = std::string(algorithm);
    entry.hash_value = std::string(value);
  }

  void read_size(std::size_t line, std::string_view text, RecordEntry& entry) {
    if (text.empty()) return;
    std::uint64_t size = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), size);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return problem(line, fmt::format("has a malformed size '{}'; size ignored for {}",
                                       printable_excerpt(text), printable_excerpt(entry.path)));
    }
    entry.size = size;
  }

  std::string_view m_source;
  RecordParse& m_out;
};

}  // namespace

RecordParse parse_record_lenient(std::string_view text, std::string_view source_name) {
  RecordParse out;
  out.entries.reserve(count_of(text, '\n') + 1);
  RowReader reader(source_name, out);
  for_each_csv_row(text, [&reader](std::size_t line, const std::vector<std::string>& fields,
                                   bool unterminated) { reader.read(line, fields, unterminated); });
  return out;
}

Result<std::vector<RecordEntry>> parse_record(std::string_view text, std::string_view source_name) {
  RecordParse parsed = parse_record_lenient(text, source_name);
  if (!parsed.problems.empty()) {
    return Error{ExitCode::usage, std::move(parsed.problems.front())};
  }
  return std::move(parsed.entries);
}

}  // namespace venvfix::dist
