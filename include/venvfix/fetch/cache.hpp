// The content-addressed download cache:
//
//   <cache>/wheels/sha256/<2 hex>/<64 hex>   the bytes, named by their sha256
//   <cache>/urls/<sha256 of the URL>         the sha256 of what that URL served (for links
//                                             without a hash; the URL is stored without user-info)
//   <cache>/tmp/                             downloads in progress
//
// A blob is only ever created by renaming a fully written, fsynced temporary file whose hash
// was checked, so readers never see a partial blob and two processes that fetch the same bytes
// at once both succeed (the second rename replaces identical content). A blob found with other
// bytes than its name says (disk corruption, a hand edit) is treated as absent and removed.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"

namespace venvfix::fetch {

namespace fs = std::filesystem;

// A temporary file in <cache>/tmp; removed on destruction unless committed.
class CacheTempFile {
 public:
  CacheTempFile(CacheTempFile&& other) noexcept;
  CacheTempFile& operator=(CacheTempFile&&) = delete;
  CacheTempFile(const CacheTempFile&) = delete;
  CacheTempFile& operator=(const CacheTempFile&) = delete;
  ~CacheTempFile();

  int fd() const { return m_fd.get(); }
  const fs::path& path() const { return m_path; }
  // Empties the file (a restarted download).
  Status truncate();

 private:
  friend class DownloadCache;
  CacheTempFile(Fd fd, fs::path path) : m_fd(std::move(fd)), m_path(std::move(path)) {}
  Fd m_fd;
  fs::path m_path;
};

class DownloadCache {
 public:
  explicit DownloadCache(fs::path root) : m_root(std::move(root)) {}

  const fs::path& root() const { return m_root; }
  fs::path blob_path(std::string_view sha256_hex) const;

  // The blob stored under `sha256_hex`, when there is one. Not re-hashed here: whoever reads it
  // hashes what it reads (the downloader, as it hands the bytes on) and calls remove_damaged
  // when they are not the bytes named.
  std::optional<fs::path> stored_blob(std::string_view sha256_hex) const;
  // Removes a blob whose bytes are not the ones its name promises, saying why: the next request
  // for it downloads it again.
  void remove_damaged(const fs::path& blob, std::string_view why) const;
  // The sha256 last recorded for `url` (user-info ignored); the blob itself may be gone.
  std::optional<std::string> hash_for_url(std::string_view url) const;
  Status remember_url(std::string_view url, std::string_view sha256_hex) const;

  Result<CacheTempFile> create_temp() const;
  // fsyncs `file`, renames it to the blob for `sha256_hex` and fsyncs the directory.
  Result<fs::path> commit(CacheTempFile file, std::string_view sha256_hex) const;

  // Removes temporary files older than `max_age` left by crashed processes.
  void remove_stale_temp_files(std::chrono::seconds max_age) const;

 private:
  fs::path m_root;
};

}  // namespace venvfix::fetch
