#include "venvfix/txn/journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <ctime>

#include <nlohmann/json.hpp>

#include "txn/paths.hpp"
#include "venvfix/base/json_fields.hpp"
#include "venvfix/base/json_text.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/base/utf8.hpp"

namespace venvfix::txn {

using nlohmann::json;

std::string_view to_string(StepOp op) {
  switch (op) {
    case StepOp::make_dir:
      return "make_dir";
    case StepOp::move_out:
      return "move_out";
    case StepOp::move_in:
      return "move_in";
    case StepOp::prune_dir:
      return "prune_dir";
  }
  return "?";
}

std::string Journal::snapshot_files() const {
  return ".venvfix/snapshots/" + id + "/files";
}

fs::path journal_dir(const env::Venv& venv) {
  return venv.state_dir() / "journal";
}
fs::path journal_file(const env::Venv& venv) {
  return journal_dir(venv) / "journal.json";
}
fs::path commit_marker(const env::Venv& venv) {
  return journal_dir(venv) / "committed";
}

std::string to_json_text(const Journal& journal) {
  json steps = json::array();
  for (const Step& step : journal.steps) {
    json s = {{"op", to_string(step.op)}};
    // A name that is not UTF-8 (a Linux file name is bytes) cannot be a JSON string: its bytes
    // in hex instead, read back exactly.
    if (is_valid_utf8(step.path)) {
      s["path"] = step.path;
    } else {
      s["path_hex"] = to_hex(
          std::span(reinterpret_cast<const std::uint8_t*>(step.path.data()), step.path.size()));
    }
    if (step.op == StepOp::make_dir || step.op == StepOp::prune_dir) s["mode"] = step.mode;
    steps.push_back(std::move(s));
  }
  json document = {{"schema", "venvfix-journal/1"},
                   {"id", journal.id},
                   {"reason", journal.reason},
                   {"created", journal.created},
                   {"pid", journal.pid},
                   {"staging", journal.staging},
                   {"staging_owned", journal.staging_owned},
                   {"consumes", journal.consumes},
                   {"relink", journal.relink},
                   {"steps", std::move(steps)}};
  return json_text(document, 1) + "\n";
}

namespace {

Result<StepOp> parse_step_op(const std::string& op, const JsonFields& fields) {
  if (op == "make_dir") return StepOp::make_dir;
  if (op == "move_out") return StepOp::move_out;
  if (op == "move_in") return StepOp::move_in;
  if (op == "prune_dir") return StepOp::prune_dir;
  return fields.fail("unknown step {}", op);
}

// A step's "path_hex": the bytes of a path that is not UTF-8.
Result<std::string> path_from_hex(const JsonFields& fields) {
  VENVFIX_TRY_ASSIGN(std::string hex, fields.string("path_hex"));
  std::optional<std::string> path = bytes_from_hex(hex);
  if (!path) return fields.fail("bad path_hex {}", hex);
  return std::move(*path);
}

Result<Step> parse_step(const json& object, std::string context) {
  if (!object.is_object()) return make_error(ExitCode::error, "{}: not an object", context);
  const JsonFields fields(object, std::move(context), ExitCode::error);
  Step step;
  VENVFIX_TRY_ASSIGN(std::string op, fields.string("op"));
  VENVFIX_TRY_ASSIGN(step.op, parse_step_op(op, fields));
  if (fields.has("path_hex")) {
    VENVFIX_TRY_ASSIGN(step.path, path_from_hex(fields));
  } else {
    VENVFIX_TRY_ASSIGN(step.path, fields.string("path"));
  }
  if (!is_safe_relative(step.path) || is_state_path(step.path)) {
    return fields.fail("step path {} leaves the venv", step.path);
  }
  if (step.op == StepOp::make_dir || step.op == StepOp::prune_dir) {
    VENVFIX_TRY_ASSIGN(std::optional<std::uint64_t> mode, fields.count("mode"));
    step.mode = static_cast<std::uint32_t>(*mode & 07777);
  }
  return step;
}

}  // namespace

Result<Journal> parse_journal(std::string_view text, std::string_view source) {
  json document = json::parse(text, nullptr, false);
  const std::string context = fmt::format("{} is not a valid venvfix journal", source);
  if (document.is_discarded() || !document.is_object()) {
    return make_error(ExitCode::error, "{}: not a JSON object", context);
  }
  const JsonFields fields(document, context, ExitCode::error);
  if (fields.string("schema").value_or("") != "venvfix-journal/1") {
    return fields.fail("unknown schema");
  }
  Journal journal;
  VENVFIX_TRY_ASSIGN(journal.id, fields.string("id"));
  VENVFIX_TRY_ASSIGN(journal.reason, fields.string("reason"));
  VENVFIX_TRY_ASSIGN(journal.created, fields.string("created"));
  VENVFIX_TRY_ASSIGN(std::optional<std::int64_t> pid, fields.integer("pid"));
  journal.pid = static_cast<long>(*pid);
  VENVFIX_TRY_ASSIGN(journal.staging, fields.string("staging"));
  VENVFIX_TRY_ASSIGN(journal.staging_owned, fields.boolean("staging_owned"));
  VENVFIX_TRY_ASSIGN(journal.consumes, fields.string("consumes"));
  VENVFIX_TRY_ASSIGN(journal.relink, fields.boolean("relink", Presence::optional, false));
  if (!is_safe_id(journal.id)) return fields.fail("bad id");
  if (!journal.consumes.empty() && !is_safe_id(journal.consumes))
    return fields.fail("bad consumes");
  if (!is_safe_relative(journal.staging) || !journal.staging.starts_with(".venvfix/")) {
    return fields.fail("bad staging directory");
  }
  VENVFIX_TRY_ASSIGN(const json* steps, fields.array("steps"));
  for (std::size_t i = 0; i < steps->size(); ++i) {
    VENVFIX_TRY_ASSIGN(Step step,
                       parse_step((*steps)[i], fmt::format("{}: step {}", context, i + 1)));
    journal.steps.push_back(std::move(step));
  }
  return journal;
}

namespace {

Status mkdir_if_missing(StepFs& disk, const fs::path& dir) {
  int error = disk.make_dir(AT_FDCWD, dir.string(), 0755);
  if (error != 0 && error != EEXIST) {
    return make_error(ExitCode::error, "cannot create {}: {}", dir.string(), errno_message(error));
  }
  return ok();
}

Status remove_tree(StepFs& disk, const fs::path& dir) {
  if (int error = disk.remove(AT_FDCWD, dir.string(), StepFs::Remove::tree); error != 0) {
    return make_error(ExitCode::error, "cannot remove {}: {}", dir.string(), errno_message(error));
  }
  return ok();
}

Status sync_dir(StepFs& disk, const fs::path& dir) {
  if (int error = disk.sync(AT_FDCWD, dir.string(), StepFs::Sync::directory); error != 0) {
    return make_error(ExitCode::error, "{}: fsync: {}", dir.string(), errno_message(error));
  }
  return ok();
}

}  // namespace

Status write_journal(StepFs& disk, const env::Venv& venv, const Journal& journal) {
  VENVFIX_TRY(mkdir_if_missing(disk, venv.state_dir()));
  fs::path dir = journal_dir(venv);
  // Leftovers of a transaction that ended between removing journal.json and the rest.
  VENVFIX_TRY(remove_tree(disk, dir));
  VENVFIX_TRY(mkdir_if_missing(disk, dir));
  VENVFIX_TRY(write_atomic(disk, journal_file(venv), to_json_text(journal)));
  return sync_dir(disk, venv.state_dir());
}

Result<std::optional<Journal>> read_journal(const env::Venv& venv) {
  fs::path file = journal_file(venv);
  if (::access(file.c_str(), F_OK) != 0 && errno == ENOENT) return std::optional<Journal>();
  VENVFIX_TRY_ASSIGN(std::string text, read_file(file));
  VENVFIX_TRY_ASSIGN(Journal journal, parse_journal(text, file.string()));
  return std::optional<Journal>(std::move(journal));
}

Status write_commit_marker(StepFs& disk, const env::Venv& venv, KeepSnapshot keep) {
  return write_atomic(disk, commit_marker(venv),
                      keep == KeepSnapshot::yes ? "keep-snapshot yes\n" : "keep-snapshot no\n");
}

Result<std::optional<KeepSnapshot>> read_commit_marker(const env::Venv& venv) {
  fs::path file = commit_marker(venv);
  if (::access(file.c_str(), F_OK) != 0 && errno == ENOENT) return std::optional<KeepSnapshot>();
  VENVFIX_TRY_ASSIGN(std::string text, read_file(file, 4096));
  if (text == "keep-snapshot yes\n") return std::optional<KeepSnapshot>(KeepSnapshot::yes);
  if (text == "keep-snapshot no\n") return std::optional<KeepSnapshot>(KeepSnapshot::no);
  return make_error(ExitCode::error, "{} is not a valid commit marker", file.string());
}

Status remove_journal(StepFs& disk, const env::Venv& venv) {
  fs::path file = journal_file(venv);
  int error = disk.remove(AT_FDCWD, file.string(), StepFs::Remove::file);
  if (error != 0 && error != ENOENT) {
    return make_error(ExitCode::error, "cannot remove {}: {}", file.string(), errno_message(error));
  }
  if (::access(journal_dir(venv).c_str(), F_OK) != 0) return ok();  // already gone
  VENVFIX_TRY(sync_dir(disk, journal_dir(venv)));
  return remove_tree(disk, journal_dir(venv));
}

std::string utc_now_iso8601() {
  return utc_iso8601(std::chrono::system_clock::now());
}

std::string utc_iso8601(std::chrono::system_clock::time_point when) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::string new_id() {
  static std::atomic<unsigned> counter{0};
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y%m%dT%H%M%S", &tm);
  return fmt::format("{}{:03}Z-{:x}{:x}", buffer, millis.count(), ::getpid() & 0xffff,
                     counter.fetch_add(1));
}

}  // namespace venvfix::txn
