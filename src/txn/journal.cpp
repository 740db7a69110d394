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
    json s = {{"op", to_string(step.op)}, {"path", step.path}};
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
  return document.dump(1) + "\n";
}

Result<Journal> parse_journal(std::string_view text, std::string_view source) {
  json document = json::parse(text, nullptr, false);
  auto bad = [&](std::string_view what) {
    return make_error(ExitCode::error, "{} is not a valid venvfix journal: {}", source, what);
  };
  if (document.is_discarded() || !document.is_object()) return bad("not a JSON object");
  if (document.value("schema", "") != "venvfix-journal/1") return bad("unknown schema");
  try {
    Journal journal;
    journal.id = document.at("id").get<std::string>();
    journal.reason = document.at("reason").get<std::string>();
    journal.created = document.at("created").get<std::string>();
    journal.pid = document.at("pid").get<long>();
    journal.staging = document.at("staging").get<std::string>();
    journal.staging_owned = document.at("staging_owned").get<bool>();
    journal.consumes = document.at("consumes").get<std::string>();
    journal.relink = document.value("relink", false);
    if (!is_safe_id(journal.id)) return bad("bad id");
    if (!journal.consumes.empty() && !is_safe_id(journal.consumes)) return bad("bad consumes");
    if (!is_safe_relative(journal.staging) || !journal.staging.starts_with(".venvfix/")) {
      return bad("bad staging directory");
    }
    for (const json& s : document.at("steps")) {
      Step step;
      std::string op = s.at("op").get<std::string>();
      if (op == "make_dir")
        step.op = StepOp::make_dir;
      else if (op == "move_out")
        step.op = StepOp::move_out;
      else if (op == "move_in")
        step.op = StepOp::move_in;
      else if (op == "prune_dir")
        step.op = StepOp::prune_dir;
      else
        return bad("unknown step " + op);
      step.path = s.at("path").get<std::string>();
      if (!is_safe_relative(step.path) || is_state_path(step.path)) {
        return bad("step path " + step.path + " leaves the venv");
      }
      if (step.op == StepOp::make_dir || step.op == StepOp::prune_dir) {
        step.mode = s.at("mode").get<std::uint32_t>() & 07777;
      }
      journal.steps.push_back(std::move(step));
    }
    return journal;
  } catch (const json::exception& e) {
    return bad(e.what());
  }
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
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
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
