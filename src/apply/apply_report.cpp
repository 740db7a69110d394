// The "venvfix-apply/1" document and the verification lines of an ApplyReport.
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "venvfix/apply/apply.hpp"

namespace venvfix::apply {

namespace {

double rounded(double seconds) {
  return static_cast<double>(std::llround(seconds * 1000)) / 1000;
}

}  // namespace

nlohmann::json apply_json(const ApplyReport& report, std::string_view command) {
  using nlohmann::json;
  json actions = json::array();
  for (const ActionDone& done : report.actions) {
    json item = {{"action", plan::to_string(done.kind)},
                 {"dist", done.dist},
                 {"version", done.version},
                 {"files_added", done.files_added},
                 {"files_removed", done.files_removed},
                 {"kept", done.kept}};
    if (done.replaced) {
      item["replaces"] = {{"dist", done.replaced->dist}, {"version", done.replaced->version}};
    }
    if (done.kind == plan::ActionKind::install) item["from_cache"] = done.from_cache;
    actions.push_back(std::move(item));
  }
  json failures = json::array();
  for (const verify::Finding& finding : report.targets.failures) {
    failures.push_back(verify::to_json(finding));
  }
  json remaining = json::array();
  for (const verify::Finding& finding : report.targets.remaining) {
    remaining.push_back(verify::to_json(finding));
  }
  json loads = json::array();
  for (const LoadResult& load : report.loads) {
    json item = {{"path", load.path.string()}, {"status", to_string(load.status)}};
    if (!load.message.empty()) item["message"] = load.message;
    if (!load.proven_at.empty()) item["proven_at"] = load.proven_at;
    loads.push_back(std::move(item));
  }
  json verify_cmd = nullptr;
  if (report.verify_cmd) {
    verify_cmd = {{"exit_code", report.verify_cmd->exit_code},
                  {"timed_out", report.verify_cmd->timed_out}};
  }
  const ApplyTimings& t = report.timings;
  return {{"schema", "venvfix-apply/1"},
          {"command", command},
          {"venv", report.venv},
          {"nothing_to_do", report.nothing_to_do},
          {"actions", std::move(actions)},
          {"snapshot", report.snapshot ? json(*report.snapshot) : json(nullptr)},
          {"verification",
           {{"ok", report.verified},
            {"targets", {{"failures", std::move(failures)}, {"remaining", std::move(remaining)}}},
            {"loads", std::move(loads)},
            {"verify_cmd", std::move(verify_cmd)},
            {"probe", report.probe ? verify::probe_json(*report.probe) : json(nullptr)}}},
          {"timings",
           {{"check_s", rounded(t.check_s)},
            {"download_s", rounded(t.download_s)},
            {"stage_s", rounded(t.stage_s)},
            {"move_s", rounded(t.move_s)},
            {"verify_s", rounded(t.verify_s)},
            {"commit_s", rounded(t.commit_s)},
            {"total_s", rounded(t.total_s)}}}};
}

std::vector<std::string> describe_verification(const ApplyReport& report) {
  std::vector<std::string> lines;
  std::size_t loaded = 0;
  std::size_t proven_earlier = 0;
  for (const LoadResult& load : report.loads) {
    const bool kept = !load.proven_at.empty();
    if (load.status == LoadStatus::loaded) {
      ++loaded;
      proven_earlier += kept ? 1 : 0;
    } else {
      lines.push_back(fmt::format("{} {}: {}{}", to_string(load.status), load.path.string(),
                                  load.message, kept ? " (an earlier check's verdict, kept)" : ""));
    }
  }
  std::string summary =
      fmt::format("{} of {} libraries loaded in a child process", loaded, report.loads.size());
  if (proven_earlier != 0) {
    summary += fmt::format(
        " ({} of them by an earlier check of the same bytes, kept: --recheck-loads loads them "
        "again)",
        proven_earlier);
  }
  lines.insert(lines.begin(), std::move(summary));
  for (const verify::Finding& finding : report.targets.failures) {
    lines.push_back("problem: " + finding.message);
  }
  for (const verify::Finding& finding : report.targets.remaining) {
    lines.push_back("still there (not this plan's to fix): " + finding.message);
  }
  if (report.verify_cmd) {
    lines.push_back(report.verify_cmd->timed_out ? std::string("--verify-cmd timed out")
                                                 : fmt::format("--verify-cmd exited with status {}",
                                                               report.verify_cmd->exit_code));
  }
  if (report.probe) {
    lines.push_back(
        report.probe->run.import_ok
            ? fmt::format("`{}` works in the venv's interpreter ({:.2f} s)",
                          report.probe->run.statement, report.probe->run.seconds)
            : fmt::format("`{}` failed: {}", report.probe->run.statement, report.probe->run.error));
    for (const verify::ProbeFinding& finding : report.probe->findings) {
      lines.push_back(
          fmt::format("probe {}: {}", verify::to_string(finding.kind), finding.message));
    }
  } else if (!report.probe_skipped.empty()) {
    lines.push_back("probe skipped: " + report.probe_skipped);
  }
  return lines;
}

void print_apply_report(const ApplyReport& report, std::ostream& out) {
  if (report.nothing_to_do) {
    out << "nothing to do: " << report.venv << " needs no change\n";
    return;
  }
  for (const ActionDone& done : report.actions) {
    if (done.kind == plan::ActionKind::install) {
      out << fmt::format("installed {} {}", done.dist, done.version);
      if (done.replaced) {
        out << fmt::format(" (replacing {} {})", done.replaced->dist, done.replaced->version);
      }
      out << fmt::format(": {} files{}\n", done.files_added,
                         done.from_cache ? ", wheel from the cache" : "");
    } else {
      out << fmt::format("removed {} {}: {} files", done.dist, done.version, done.files_removed);
      if (!done.kept.empty()) {
        out << fmt::format(", kept {} path{} another distribution owns", done.kept.size(),
                           done.kept.size() == 1 ? "" : "s");
      }
      out << "\n";
    }
  }
  out << (report.verified ? "verified: " : "NOT verified: ");
  std::vector<std::string> lines = describe_verification(report);
  for (std::size_t i = 0; i < lines.size(); ++i) out << (i == 0 ? "" : "  ") << lines[i] << "\n";
  if (report.snapshot) {
    out << fmt::format("snapshot {}: `venvfix rollback {}` restores the state before\n",
                       *report.snapshot, *report.snapshot);
  }
}

}  // namespace venvfix::apply
