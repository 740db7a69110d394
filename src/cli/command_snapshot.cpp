// venvfix snapshot create|list|show|diff|delete|prune.
#include <iostream>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "venvfix/base/json_text.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/txn/lock.hpp"
#include "venvfix/txn/snapshot.hpp"

namespace venvfix::cli {

namespace {

using nlohmann::json;

struct SnapshotArgs {
  std::string reason = "snapshot create";
  std::optional<std::string> id;
  std::vector<std::string> ids;
  std::size_t keep = 3;
  bool wait = false;
};

json to_json(const txn::SnapshotInfo& info) {
  return {{"id", info.id},         {"created", info.created}, {"reason", info.reason},
          {"files", info.files},   {"bytes", info.bytes},     {"kind", txn::to_string(info.kind)},
          {"method", info.method}, {"format", info.format}};
}

// The venv, refusing over an unfinished transaction like every other command.
Result<env::Venv> open_checked(const GlobalOptions& options) {
  VENVFIX_TRY_ASSIGN(env::Venv venv, open_environment(options));
  VENVFIX_TRY(txn::require_no_unfinished_transaction(venv));
  return venv;
}

Result<txn::VenvLock> lock(const env::Venv& venv, const SnapshotArgs& args) {
  return txn::VenvLock::acquire(venv, args.wait ? txn::LockWait::wait : txn::LockWait::fail);
}

Result<int> run_create(const GlobalOptions& options, const SnapshotArgs& args) {
  VENVFIX_TRY_ASSIGN(env::Venv venv, open_checked(options));
  VENVFIX_TRY_ASSIGN(txn::VenvLock held, lock(venv, args));
  VENVFIX_TRY_ASSIGN(txn::SnapshotInfo info, txn::create_snapshot(venv, held, args.reason));
  if (const auto behind = env::own_site_behind_symlink(venv)) {
    spdlog::warn(
        "{} is a symlink (to {}): snapshot {} records it and holds nothing behind it, "
        "so a rollback cannot restore the files there",
        behind->link.string(), behind->target.string(), info.id);
  }
  if (options.json) {
    std::cout << json_text(to_json(info), 2) << "\n";
  } else {
    std::cout << fmt::format("created snapshot {} of {} ({} files, {}, {})\n", info.id,
                             venv.root.string(), info.files, human_size(info.bytes), info.method);
  }
  return 0;
}

Result<int> run_list(const GlobalOptions& options) {
  VENVFIX_TRY_ASSIGN(env::Venv venv, open_checked(options));
  VENVFIX_TRY_ASSIGN(auto all, txn::list_snapshots(venv));
  if (options.json) {
    json list = json::array();
    for (const auto& info : all) list.push_back(to_json(info));
    std::cout << json_text(json{{"schema", "venvfix-snapshots/1"}, {"snapshots", list}}, 2) << "\n";
    return 0;
  }
  if (all.empty()) {
    std::cout << fmt::format("{}: no snapshots\n", venv.root.string());
    return 0;
  }
  for (const auto& info : all) {
    std::cout << fmt::format("{}  {}  {:<11}  {:>7} files  {:>10}  {}\n", info.id, info.created,
                             txn::to_string(info.kind), info.files, human_size(info.bytes),
                             info.reason);
  }
  return 0;
}

Result<int> run_show(const GlobalOptions& options, const SnapshotArgs& args) {
  VENVFIX_TRY_ASSIGN(env::Venv venv, open_checked(options));
  VENVFIX_TRY_ASSIGN(txn::SnapshotInfo info, txn::find_snapshot(venv, args.id));
  if (options.json) {
    std::cout << json_text(to_json(info), 2) << "\n";
  } else {
    std::cout << fmt::format(
        "id       {}\ncreated  {}\nkind     {}\nmethod   {}\nreason   {}\nfiles    {}\nbytes    "
        "{} ({})\nformat   {}\n",
        info.id, info.created, txn::to_string(info.kind), info.method, info.reason, info.files,
        info.bytes, human_size(info.bytes), info.format);
  }
  return 0;
}

Result<int> run_diff(const GlobalOptions& options, const SnapshotArgs& args) {
  VENVFIX_TRY_ASSIGN(env::Venv venv, open_checked(options));
  VENVFIX_TRY_ASSIGN(txn::SnapshotInfo info, txn::find_snapshot(venv, args.id));
  VENVFIX_TRY_ASSIGN(txn::SnapshotDiff diff, txn::diff_snapshot(venv, info.id));
  if (options.json) {
    const json document = {{"schema", "venvfix-snapshot-diff/1"},
                           {"snapshot", info.id},
                           {"added", diff.added},
                           {"removed", diff.removed},
                           {"changed", diff.changed}};
    std::cout << json_text(document, 2) << "\n";
  } else {
    for (const auto& p : diff.removed) std::cout << "- " << p << "\n";
    for (const auto& p : diff.changed) std::cout << "~ " << p << "\n";
    for (const auto& p : diff.added) std::cout << "+ " << p << "\n";
    std::cout << fmt::format(
        "since snapshot {}: {} removed, {} changed, {} added (rollback puts them back)\n", info.id,
        diff.removed.size(), diff.changed.size(), diff.added.size());
  }
  return diff.added.empty() && diff.removed.empty() && diff.changed.empty() ? 0 : 3;
}

Result<int> run_delete(const GlobalOptions& options, const SnapshotArgs& args) {
  VENVFIX_TRY_ASSIGN(env::Venv venv, open_checked(options));
  VENVFIX_TRY_ASSIGN(txn::VenvLock held, lock(venv, args));
  for (const std::string& id : args.ids) {
    VENVFIX_TRY(txn::delete_snapshot(venv, held, id));
    if (!options.json) std::cout << "deleted snapshot " << id << "\n";
  }
  if (options.json) std::cout << json_text(json{{"deleted", args.ids}}, 2) << "\n";
  return 0;
}

Result<int> run_prune(const GlobalOptions& options, const SnapshotArgs& args) {
  VENVFIX_TRY_ASSIGN(env::Venv venv, open_checked(options));
  VENVFIX_TRY_ASSIGN(txn::VenvLock held, lock(venv, args));
  VENVFIX_TRY_ASSIGN(auto deleted, txn::prune_snapshots(venv, held, args.keep));
  if (options.json) {
    std::cout << json_text(json{{"deleted", deleted}}, 2) << "\n";
  } else {
    std::cout << fmt::format("deleted {} snapshots, kept the newest {}\n", deleted.size(),
                             args.keep);
  }
  return 0;
}

void add_wait(CLI::App* sub, SnapshotArgs& args) {
  sub->add_flag("--wait", args.wait, "Wait for the venv's lock instead of failing (exit 6)");
}

}  // namespace

void add_snapshot_command(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<SnapshotArgs>();
  CLI::App* sub = app.add_subcommand("snapshot",
                                     "Create, list, show, diff, delete and prune "
                                     "snapshots (restore one with `rollback`)");
  sub->require_subcommand(1);
  auto bind = [&context, args](CLI::App* cmd,
                               Result<int> (*fn)(const GlobalOptions&, const SnapshotArgs&)) {
    cmd->callback([&context, args, fn] {
      context.run = [&context, args, fn] { return fn(context.options, *args); };
    });
  };
  CLI::App* create = sub->add_subcommand("create", "Snapshot the whole venv (no data copied)");
  create->add_option("--reason", args->reason, "A note stored with the snapshot");
  add_wait(create, *args);
  bind(create, run_create);
  CLI::App* list = sub->add_subcommand("list", "List snapshots, oldest first");
  list->callback([&context] { context.run = [&context] { return run_list(context.options); }; });
  CLI::App* show = sub->add_subcommand("show", "Show one snapshot (default: the newest)");
  show->add_option("id", args->id, "Snapshot id");
  bind(show, run_show);
  CLI::App* diff =
      sub->add_subcommand("diff",
                          "What changed since a snapshot (default: the newest); exit 3 "
                          "when something did");
  diff->add_option("id", args->id, "Snapshot id");
  bind(diff, run_diff);
  CLI::App* remove = sub->add_subcommand("delete", "Delete snapshots");
  remove->add_option("ids", args->ids, "Snapshot ids")->required();
  add_wait(remove, *args);
  bind(remove, run_delete);
  CLI::App* prune = sub->add_subcommand("prune", "Delete all but the newest snapshots");
  prune->add_option("--keep", args->keep, "How many to keep (default 3)");
  add_wait(prune, *args);
  bind(prune, run_prune);
}

}  // namespace venvfix::cli
