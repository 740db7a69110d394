// venvfix-download: a small command-line driver over the index client and the downloader, for
// the download benchmark (bench/download_bench.sh) and for trying an index by hand:
//
//   venvfix-download --index-url URL [--find-links L]… [--cache-dir DIR] [--parallel N]
//                    [--python 3.12] [--quiet] PROJECT[SPEC]…
//
// Each PROJECT may carry a specifier (`torch==2.8.0`, `demo>=1`). The wheel is chosen for the
// host (x86_64 glibc 2.36 unless --python/--glibc say otherwise) and every wheel is downloaded
// at once through Downloader::download_all. Prints one line per wheel: sha256, size, path.
//
// bench/download_bench.sh compiles it with -O2 against the base, pep, index and fetch sources
// (no CMake build tree needed); it is not part of any CMake target. The `venvfix` CLI uses the
// same library calls.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "venvfix/base/log.hpp"
#include "venvfix/fetch/downloader.hpp"
#include "venvfix/index/client.hpp"
#include "venvfix/index/select.hpp"

using namespace venvfix;

int main(int argc, char** argv) {
  index::IndexConfig config = index::IndexConfig::from_environment();
  std::vector<std::string> projects;
  pep::TargetPython target;
  target.major = 3;
  target.minor = 12;
  target.arch = "x86_64";
  target.glibc = std::make_pair(2, 36);
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string argument = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", argument.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (argument == "--index-url") {
      config.index_urls = {value()};
    } else if (argument == "--extra-index-url") {
      config.index_urls.push_back(value());
    } else if (argument == "--find-links") {
      config.find_links.push_back(value());
    } else if (argument == "--cache-dir") {
      config.cache_dir = value();
    } else if (argument == "--parallel") {
      config.parallel = std::atoi(value().c_str());
    } else if (argument == "--timeout") {
      config.timeout_seconds = std::atof(value().c_str());
    } else if (argument == "--cert") {
      config.ca_cert = value();
    } else if (argument == "--offline") {
      config.offline = true;
    } else if (argument == "--quiet") {
      config.progress = fetch::ProgressMode::off;
    } else if (argument == "-v") {
      verbose = true;
    } else if (argument == "--python") {
      std::string version = value();
      target.major = std::atoi(version.c_str());
      target.minor = std::atoi(version.substr(version.find('.') + 1).c_str());
    } else if (!argument.empty() && argument[0] == '-') {
      std::fprintf(stderr, "unknown option %s\n", argument.c_str());
      return 2;
    } else {
      projects.push_back(argument);
    }
  }
  setup_logging(verbose ? Verbosity::verbose : Verbosity::normal, Color::automatic);
  index::IndexClient client(config);
  std::vector<fetch::DownloadRequest> requests;
  for (const std::string& text : projects) {
    std::size_t split = text.find_first_of("<>=!~ ");
    std::string name = text.substr(0, split);
    auto specifier = pep::SpecifierSet::parse(split == std::string::npos ? "" : text.substr(split));
    if (!specifier) {
      std::fprintf(stderr, "error: %s\n", specifier.error().message.c_str());
      return 2;
    }
    auto page = client.project(name);
    if (!page) {
      std::fprintf(stderr, "error: %s\n", page.error().message.c_str());
      return static_cast<int>(page.error().code);
    }
    index::SelectionLog log;
    auto candidate = index::select_wheel(*page, *specifier, target, &log);
    if (verbose) {
      for (const auto& skipped : log.skipped) {
        spdlog::info("skipped {}: {}", skipped.filename, skipped.reason);
      }
    }
    if (!candidate) {
      std::fprintf(stderr, "error: %s\n", candidate.error().message.c_str());
      return static_cast<int>(candidate.error().code);
    }
    requests.push_back({candidate->file.url, candidate->file.sha256_hex, candidate->file.size,
                        candidate->file.filename});
  }
  auto results = client.downloader().download_all(requests);
  if (!results) {
    std::fprintf(stderr, "error: %s\n", results.error().message.c_str());
    return static_cast<int>(results.error().code);
  }
  for (const fetch::DownloadResult& result : *results) {
    std::printf("%s %llu %s%s\n", result.sha256_hex.c_str(),
                static_cast<unsigned long long>(result.size), result.path.c_str(),
                result.from_cache ? " (cached)" : "");
  }
  return 0;
}
