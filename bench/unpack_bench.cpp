// Installs wheels into a staging directory with wheel::install_wheel, the way `venvfix apply`
// stages them, and prints the wall time: bench/apply_bench.sh runs it next to pip and bsdtar.
//
//   unpack_bench --venv VENV --staging DIR [--streaming] [--threads N] [--max-buffer-mb N]
//                WHEEL...
//   unpack_bench --venv VENV --staging DIR --index-url URL --cache-dir DIR [--parallel N]
//                PROJECT...
//
// With --index-url it resolves each project's newest wheel on the simple index, downloads
// them all (fetch::Downloader) and stages each wheel as soon as its download completes
// (download_each), on one thread next to the downloads. The staging directory must exist and
// be empty; the staged files stay (the caller removes them).
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "venvfix/env/venv.hpp"
#include "venvfix/fetch/downloader.hpp"
#include "venvfix/index/client.hpp"
#include "venvfix/wheel/wheel.hpp"

namespace {

using namespace venvfix;

struct Args {
  fs::path venv, staging, cache_dir;
  std::string index_url;
  int parallel = 6;
  wheel::InstallOptions options;
  std::vector<std::string> items;
};

int usage() {
  std::fprintf(stderr,
               "usage: unpack_bench --venv VENV --staging DIR [--streaming] [--threads N] "
               "[--max-buffer-mb N] [--index-url URL --cache-dir DIR [--parallel N]] ITEM...\n");
  return 2;
}

struct Totals {
  std::size_t files = 0;
  std::uint64_t bytes = 0;
};

Status stage(const fs::path& wheel_file, const env::Venv& venv, const Args& args, Totals& totals) {
  // One staging directory per wheel, as a transaction stages each distribution.
  fs::path dir = args.staging / wheel_file.filename().string();
  std::error_code error;
  fs::create_directories(dir, error);
  VENVFIX_TRY_ASSIGN(wheel::InstallResult result,
                     wheel::install_wheel(wheel_file, venv, dir, args.options));
  totals.files += result.files.size();
  for (const wheel::InstalledFile& file : result.files) totals.bytes += file.size;
  return ok();
}

// Downloads everything and stages each wheel as soon as it is in the cache.
Status download_and_stage(const env::Venv& venv, const Args& args, Totals& totals) {
  index::IndexConfig config;
  config.index_urls = {args.index_url};
  config.cache_dir = args.cache_dir;
  config.parallel = args.parallel;
  config.progress = fetch::ProgressMode::off;
  fetch::Downloader downloader(config);
  index::IndexClient client(config, downloader);
  std::vector<fetch::DownloadRequest> requests;
  for (const std::string& project : args.items) {
    VENVFIX_TRY_ASSIGN(index::ProjectPage page, client.project(project));
    if (page.files.empty()) return make_error(ExitCode::error, "{}: no files", project);
    const index::IndexFile& file = page.files.back();
    fetch::DownloadRequest request;
    request.url = file.url;
    request.sha256_hex = file.sha256_hex;
    request.display_name = file.filename;
    requests.push_back(std::move(request));
  }
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<fs::path> queue;
  bool done = false;
  Status staged = ok();
  std::thread stager([&] {
    for (;;) {
      std::unique_lock lock(mutex);
      ready.wait(lock, [&] { return done || !queue.empty(); });
      if (queue.empty()) return;
      fs::path next = queue.front();
      queue.pop_front();
      lock.unlock();
      Status status = stage(next, venv, args, totals);
      if (!status) {
        std::lock_guard relock(mutex);
        staged = std::move(status);
        return;
      }
    }
  });
  auto downloaded = downloader.download_each(
      requests, [&](std::size_t i, const fetch::DownloadResult& result) -> Status {
        // The cache names blobs by digest: stage from a link with the wheel's own file name.
        fs::path named = args.staging / (".wheels/" + requests[i].display_name);
        std::error_code error;
        fs::create_directories(named.parent_path(), error);
        fs::create_symlink(result.path, named, error);
        if (error) return make_error(ExitCode::error, "{}: {}", named.string(), error.message());
        std::lock_guard lock(mutex);
        queue.push_back(named);
        ready.notify_one();
        return ok();
      });
  {
    std::lock_guard lock(mutex);
    done = true;
    ready.notify_one();
  }
  stager.join();
  if (!downloaded) return std::move(downloaded).error();
  return staged;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--venv") {
      args.venv = value();
    } else if (arg == "--staging") {
      args.staging = value();
    } else if (arg == "--streaming") {
      args.options.unpack = wheel::Unpack::streaming;
    } else if (arg == "--threads") {
      args.options.threads = static_cast<unsigned>(std::stoul(value()));
    } else if (arg == "--max-buffer-mb") {
      args.options.max_buffer_bytes = std::stoull(value()) << 20;
    } else if (arg == "--index-url") {
      args.index_url = value();
    } else if (arg == "--cache-dir") {
      args.cache_dir = value();
    } else if (arg == "--parallel") {
      args.parallel = std::stoi(value());
    } else if (arg.starts_with("--")) {
      return usage();
    } else {
      args.items.push_back(arg);
    }
  }
  if (args.venv.empty() || args.staging.empty() || args.items.empty()) return usage();
  auto venv = env::open_venv_at(args.venv);
  if (!venv) {
    std::fprintf(stderr, "%s\n", venv.error().message.c_str());
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  Totals totals;
  Status status = ok();
  if (!args.index_url.empty()) {
    status = download_and_stage(*venv, args, totals);
  } else {
    for (const std::string& item : args.items) {
      status = stage(item, *venv, args, totals);
      if (!status) break;
    }
  }
  if (!status) {
    std::fprintf(stderr, "%s\n", status.error().message.c_str());
    return 1;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("staged %zu wheels: %zu files, %.1f MB in %.2f s\n", args.items.size(), totals.files,
              static_cast<double>(totals.bytes) / 1e6, seconds);
  return 0;
}
