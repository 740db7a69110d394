#include "venvfix/dist/scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "venvfix/base/dir_entries.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/log.hpp"

namespace venvfix::dist {

namespace {

bool skipped_directory(std::string_view name) {
  return name == "." || name == ".." || name == ".venvfix" || name == "__pycache__";
}

bool is_stash(std::string_view name) {
  return name.starts_with('~');
}

// Walks one directory tree depth-first with an explicit stack of open directory descriptors.
void walk(const std::string& root, std::size_t site_index, std::vector<ScannedFile>& out,
          std::vector<fs::path>* stashes) {
  std::vector<std::string> stack{root};
  auto enter = [&](const std::string& dir_path, std::string_view name) {
    if (skipped_directory(name)) return;
    std::string path = dir_path + "/" + std::string(name);
    if (!is_stash(name)) {
      stack.push_back(std::move(path));
    } else if (stashes != nullptr) {
      stashes->push_back(std::move(path));
    }
  };
  while (!stack.empty()) {
    std::string dir_path = std::move(stack.back());
    stack.pop_back();
    int fd = ::open(dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      spdlog::debug("scan: skipping {}: {}", dir_path, errno_message(errno));
      continue;
    }
    Fd owned(fd);
    int error = for_each_dir_entry(fd, [&](const DirEntry& entry) {
      std::string_view name = entry.name;
      bool candidate = looks_like_shared_object(name);
      if (entry.type == DT_DIR) {
        enter(dir_path, name);
        return true;
      }
      if (entry.type != DT_UNKNOWN && entry.type != DT_REG && entry.type != DT_LNK) return true;
      if (entry.type != DT_UNKNOWN && !candidate) return true;
      struct stat st {};
      if (::fstatat(fd, entry.name, &st, AT_SYMLINK_NOFOLLOW) != 0) return true;
      if (S_ISDIR(st.st_mode)) {
        enter(dir_path, name);
        return true;
      }
      if (!candidate || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) return true;
      out.push_back(
          ScannedFile{dir_path + "/" + std::string(name), site_index, file_identity_from(st)});
      return true;
    });
    if (error != 0) spdlog::debug("scan: stopped reading {}: {}", dir_path, errno_message(error));
  }
}

}  // namespace

bool ScannedFile::is_symlink() const {
  return S_ISLNK(identity.mode);
}

bool looks_like_shared_object(std::string_view name) {
  if (name.ends_with(".so")) return name.size() > 3;
  // "*.so.<anything>": the loader accepts any version suffix ("libcudnn.so.9", ".so.12.8.93").
  std::size_t at = name.find(".so.");
  return at != std::string_view::npos && at + 4 < name.size();
}

std::vector<ScannedFile> scan_site_packages(const env::Venv& venv, std::vector<fs::path>* stashes) {
  std::vector<ScannedFile> out;
  out.reserve(1024);
  for (std::size_t i = 0; i < venv.site_packages.size(); ++i) {
    walk(venv.site_packages[i].string(), i, out, stashes);
  }
  if (stashes != nullptr) std::sort(stashes->begin(), stashes->end());
  std::sort(out.begin(), out.end(), [](const ScannedFile& a, const ScannedFile& b) {
    return a.path.native() < b.path.native();
  });
  return out;
}

}  // namespace venvfix::dist
