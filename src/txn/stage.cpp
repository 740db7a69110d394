#include "venvfix/txn/stage.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/log.hpp"
#include "venvfix/pep/name.hpp"
#include "venvfix/pep/version.hpp"

namespace venvfix::txn {

Result<std::vector<FetchedWheel>> download_plan_wheels(const plan::Plan& plan,
                                                       fetch::Downloader& downloader) {
  std::vector<fetch::DownloadRequest> requests;
  std::vector<std::size_t> actions;
  for (std::size_t i = 0; i < plan.actions.size(); ++i) {
    const plan::Action& action = plan.actions[i];
    if (action.kind != plan::ActionKind::install) continue;
    fetch::DownloadRequest request;
    request.url = action.url;
    // The plan's hash is the contract: never download without one (parse_plan requires it).
    request.sha256_hex = action.sha256;
    if (action.size != 0) request.size = action.size;
    request.display_name = action.file;
    requests.push_back(std::move(request));
    actions.push_back(i);
  }
  if (requests.empty()) return std::vector<FetchedWheel>{};
  VENVFIX_TRY_ASSIGN(std::vector<fetch::DownloadResult> results, downloader.download_all(requests));
  std::vector<FetchedWheel> out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    // download_all checked the digest; checking again here keeps the promise independent of
    // the downloader's internals (and costs a string compare).
    if (results[i].sha256_hex != plan.actions[actions[i]].sha256) {
      return make_error(ExitCode::network, "{} has sha256 {}, the plan says {}",
                        redact_url(requests[i].url), results[i].sha256_hex,
                        plan.actions[actions[i]].sha256);
    }
    out.push_back({actions[i], results[i].path, results[i].size, results[i].from_cache});
  }
  return out;
}

namespace {

// The wheel's name and version must be the ones the plan promises.
Status check_identity(const wheel::WheelContents& contents, const plan::Action& action) {
  auto version = pep::Version::parse(action.version);
  if (pep::normalize_name(action.dist) != contents.filename.normalized_name || !version ||
      !(*version == contents.filename.version)) {
    return make_error(ExitCode::usage,
                      "the plan installs {} {} but its wheel {} is {} {}; the plan is refused",
                      action.dist, action.version, contents.display_name, contents.metadata.name,
                      contents.metadata.version);
  }
  return ok();
}

// The cache names blobs by hash; read_wheel needs the wheel's own file name (its name and
// version come from it), so each blob is reached through a symlink of that name.
Result<fs::path> named_link(const fs::path& dir, const StageItem& item) {
  const fs::path name(item.file_name);
  if (item.file_name.empty() || name.filename() != name || item.file_name == "." ||
      item.file_name == ".." || !name.string().ends_with(".whl")) {
    return make_error(ExitCode::usage,
                      "the plan names the wheel file \"{}\", which is not a .whl "
                      "file name",
                      item.file_name);
  }
  fs::path link = dir / name;
  if (::symlink(fs::absolute(item.wheel).c_str(), link.c_str()) != 0) {
    return make_error(ExitCode::error, "{}: {}", link.string(), errno_message(errno));
  }
  return link;
}

}  // namespace

Result<std::vector<StagedWheel>> stage_wheels(const env::Venv& venv, const plan::Plan& plan,
                                              std::span<const StageItem> items,
                                              const fs::path& staging,
                                              const StageOptions& options) {
  VENVFIX_TRY_ASSIGN(TempDir links, TempDir::create("venvfix-wheels-"));
  std::vector<fs::path> paths;
  for (const StageItem& item : items) {
    if (item.action >= plan.actions.size()) {
      return make_error(ExitCode::error, "stage item names action {} of {}", item.action,
                        plan.actions.size());
    }
    // Two actions naming the same file would link the same name twice: refuse it clearly.
    for (const fs::path& seen : paths) {
      if (seen.filename() == item.file_name) {
        return make_error(ExitCode::usage, "the plan installs the wheel {} twice", item.file_name);
      }
    }
    VENVFIX_TRY_ASSIGN(fs::path link, named_link(links.path(), item));
    paths.push_back(std::move(link));
  }

  std::vector<std::optional<StagedWheel>> staged(items.size());
  std::optional<Error> failure;
  std::mutex failure_mutex;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};

  auto work = [&] {
    for (;;) {
      if (stop.load()) return;
      std::size_t i = next.fetch_add(1);
      if (i >= items.size()) return;
      const StageItem& item = items[i];
      const plan::Action& action = plan.actions[item.action];
      auto fail = [&](Error error) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::move(error);
        stop.store(true);
      };
      auto contents = wheel::read_wheel(paths[i]);
      if (!contents) return fail(std::move(contents).error());
      if (auto status = check_identity(*contents, action); !status) {
        return fail(std::move(status).error());
      }
      wheel::InstallOptions install_options;
      install_options.requested = item.requested;
      install_options.umask = options.umask;
      install_options.python_executable = options.python;
      auto result = wheel::install_wheel(*contents, venv, staging, install_options);
      if (!result) {
        Error error = std::move(result).error();
        return fail(with_context(std::move(error), "cannot unpack " + item.file_name));
      }
      spdlog::debug("staged {} ({} files)", item.file_name, result->files.size());
      staged[i] = StagedWheel{item.action, contents->metadata.name, contents->metadata.version,
                              std::move(result).value()};
    }
  };

  const std::size_t thread_count =
      std::min<std::size_t>(items.size(), static_cast<std::size_t>(std::max(1, options.threads)));
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < thread_count; ++t) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();
  if (failure) return std::move(*failure);

  std::vector<StagedWheel> out;
  out.reserve(staged.size());
  for (auto& wheel : staged) out.push_back(std::move(*wheel));
  return out;
}

}  // namespace venvfix::txn
