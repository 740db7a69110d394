// stamp_venv: readdir of each site-packages directory, lstat of each dist-info and its RECORD.
#include "venvfix/apply/venv_stamp.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "venvfix/base/fs.hpp"

namespace venvfix::apply {

namespace {

std::string identity_text(int dir_fd, const char* name) {
  struct stat st {};
  if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return "-";
  const FileIdentity id = file_identity_from(st);
  return fmt::format("{}:{}:{}:{}:{}:{:o}", id.device, id.inode, id.size, id.mtime_ns, id.ctime_ns,
                     id.mode);
}

bool is_metadata_dir(std::string_view name) {
  return name.ends_with(".dist-info") || name.ends_with(".egg-info");
}

// The entries of one site-packages directory into `stamp`.
Status stamp_directory(const env::Venv& venv, const fs::path& site, VenvStamp& stamp) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(site.c_str()), ::closedir);
  if (!dir) {
    if (errno == ENOENT) return ok();  // nothing installed there (yet)
    return make_error(ExitCode::error, "cannot read {}: {}", site.string(), errno_message(errno));
  }
  const int fd = ::dirfd(dir.get());
  const std::string prefix = site.lexically_relative(venv.root).generic_string();
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string name = entry->d_name;
    if (!is_metadata_dir(name)) continue;
    const std::string record = name + "/RECORD";
    stamp.entries[fmt::format("{}/{}", prefix, name)] =
        fmt::format("{} {}", identity_text(fd, name.c_str()), identity_text(fd, record.c_str()));
  }
  return ok();
}

}  // namespace

Result<VenvStamp> stamp_venv(const env::Venv& venv) {
  VenvStamp stamp;
  for (const fs::path& site : venv.site_packages) VENVFIX_TRY(stamp_directory(venv, site, stamp));
  return stamp;
}

std::string describe_stamp_change(const VenvStamp& before, const VenvStamp& after) {
  std::vector<std::string> changes;
  std::size_t total = 0;
  auto note = [&](std::string_view what, const std::string& path) {
    if (++total <= 3)
      changes.push_back(fmt::format("{} {}", what, fs::path(path).filename().string()));
  };
  for (const auto& [path, identity] : before.entries) {
    auto now = after.entries.find(path);
    if (now == after.entries.end()) {
      note("removed", path);
    } else if (now->second != identity) {
      note("changed", path);
    }
  }
  for (const auto& [path, identity] : after.entries) {
    if (before.entries.count(path) == 0) note("added", path);
  }
  std::string out;
  for (const std::string& change : changes) out += (out.empty() ? "" : ", ") + change;
  if (total > changes.size()) out += fmt::format(" and {} more", total - changes.size());
  return out;
}

}  // namespace venvfix::apply
