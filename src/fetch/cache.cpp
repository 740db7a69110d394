#include "venvfix/fetch/cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <random>

#include <spdlog/spdlog.h>

#include "venvfix/base/log.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/fetch/cache_layout.hpp"

namespace venvfix::fetch {

namespace {

Status make_directories(const fs::path& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) {
    return make_error(ExitCode::error, "cannot create the cache directory {}: {}", dir.string(),
                      error.message());
  }
  return ok();
}

std::string random_suffix() {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  return fmt::format("{:016x}", generator());
}

}  // namespace

CacheTempFile::CacheTempFile(CacheTempFile&& other) noexcept
    : m_fd(std::move(other.m_fd)), m_path(std::move(other.m_path)) {
  other.m_path.clear();
}

CacheTempFile::~CacheTempFile() {
  if (!m_path.empty()) ::unlink(m_path.c_str());
}

Status CacheTempFile::truncate() {
  if (::ftruncate(m_fd.get(), 0) != 0 || ::lseek(m_fd.get(), 0, SEEK_SET) != 0) {
    return make_error(ExitCode::error, "{}: {}", m_path.string(), errno_message(errno));
  }
  return ok();
}

fs::path DownloadCache::blob_path(std::string_view sha256_hex) const {
  std::string hex = to_lower_ascii(sha256_hex);
  return m_root / cache_layout::wheels / "sha256" / hex.substr(0, 2) / hex;
}

std::optional<fs::path> DownloadCache::stored_blob(std::string_view sha256_hex) const {
  std::string hex = to_lower_ascii(sha256_hex);
  if (!is_sha256_hex(hex) || m_root.empty()) return std::nullopt;
  fs::path path = blob_path(hex);
  std::error_code error;
  if (!fs::is_regular_file(path, error)) return std::nullopt;
  return path;
}

void DownloadCache::remove_damaged(const fs::path& blob, std::string_view why) const {
  spdlog::warn("the cached file {} {}; removing it and downloading again", blob.string(), why);
  ::unlink(blob.c_str());
}

std::optional<std::string> DownloadCache::hash_for_url(std::string_view url) const {
  if (m_root.empty()) return std::nullopt;
  fs::path record = m_root / cache_layout::urls / to_hex(sha256(redact_url(url)));
  Result<std::string> text = read_file(record, 4096);
  if (!text) return std::nullopt;
  std::string hex(trim(*text));
  if (!is_sha256_hex(hex)) return std::nullopt;
  return hex;
}

Status DownloadCache::remember_url(std::string_view url, std::string_view sha256_hex) const {
  fs::path dir = m_root / cache_layout::urls;
  VENVFIX_TRY(make_directories(dir));
  return write_file_atomic(dir / to_hex(sha256(redact_url(url))), std::string(sha256_hex) + "\n");
}

Result<CacheTempFile> DownloadCache::create_temp() const {
  if (m_root.empty()) {
    return make_error(ExitCode::usage, "no download cache directory is configured");
  }
  fs::path dir = m_root / cache_layout::temporary;
  VENVFIX_TRY(make_directories(dir));
  for (int attempt = 0;; ++attempt) {
    fs::path path = dir / (random_suffix() + ".part");
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) return CacheTempFile(Fd(fd), path);
    if (errno != EEXIST || attempt > 16) {
      return make_error(ExitCode::error, "cannot create a file in the cache {}: {}", dir.string(),
                        errno_message(errno));
    }
  }
}

Result<fs::path> DownloadCache::commit(CacheTempFile file, std::string_view sha256_hex) const {
  fs::path target = blob_path(sha256_hex);
  VENVFIX_TRY(make_directories(target.parent_path()));
  if (::fsync(file.fd()) != 0) {
    return make_error(ExitCode::error, "cannot write {}: {}", file.path().string(),
                      errno_message(errno));
  }
  ::fchmod(file.fd(), 0444);  // blobs are never changed in place
  if (::rename(file.path().c_str(), target.c_str()) != 0) {
    return make_error(ExitCode::error, "cannot move a download into the cache at {}: {}",
                      target.string(), errno_message(errno));
  }
  file.m_path.clear();  // renamed: nothing to remove
  VENVFIX_TRY(fsync_directory(target.parent_path()));
  return target;
}

void DownloadCache::remove_stale_temp_files(std::chrono::seconds max_age) const {
  std::error_code error;
  fs::path dir = m_root / cache_layout::temporary;
  if (m_root.empty() || !fs::is_directory(dir, error)) return;
  auto now = fs::file_time_type::clock::now();
  for (auto it = fs::directory_iterator(dir, error); !error && it != fs::directory_iterator();
       it.increment(error)) {
    std::error_code time_error;
    auto written = it->last_write_time(time_error);
    if (!time_error && now - written > max_age) fs::remove(it->path(), time_error);
  }
}

}  // namespace venvfix::fetch
