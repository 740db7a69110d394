#include "venvfix/txn/fingerprint.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include "venvfix/base/sha256.hpp"

namespace venvfix::txn {

Result<Fingerprint> fingerprint_tree(const fs::path& root) {
  Fingerprint out;
  std::error_code error;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, error);
  if (error) {
    return make_error(ExitCode::error, "cannot read {}: {}", root.string(), error.message());
  }
  for (; it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (error) {
      return make_error(ExitCode::error, "cannot read {}: {}", root.string(), error.message());
    }
    std::string rel = it->path().lexically_relative(root).string();
    if (rel == ".venvfix") {
      it.disable_recursion_pending();
      continue;
    }
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) {
      return make_error(ExitCode::error, "{}: {}", it->path().string(), errno_message(errno));
    }
    FingerprintEntry entry;
    entry.mode = st.st_mode & 07777;
    if (S_ISREG(st.st_mode)) {
      entry.type = 'f';
      entry.size = static_cast<std::uint64_t>(st.st_size);
      VENVFIX_TRY_ASSIGN(Sha256Digest digest, sha256_file(it->path()));
      entry.content = to_hex(digest);
    } else if (S_ISLNK(st.st_mode)) {
      entry.type = 'l';
      entry.mode = 0;
      entry.content = fs::read_symlink(it->path(), error).string();
    } else if (S_ISDIR(st.st_mode)) {
      entry.type = 'd';
    } else {
      entry.type = 'o';
    }
    out.emplace(std::move(rel), std::move(entry));
  }
  return out;
}

std::string describe_difference(const Fingerprint& before, const Fingerprint& after,
                                std::size_t limit) {
  std::string out;
  std::size_t lines = 0;
  auto add = [&](std::string_view what, const std::string& path) {
    if (lines++ < limit) out += fmt::format("{}: {}\n", what, path);
  };
  for (const auto& [path, entry] : before) {
    auto it = after.find(path);
    if (it == after.end())
      add("only before", path);
    else if (!(it->second == entry))
      add("differs", path);
  }
  for (const auto& [path, entry] : after) {
    if (!before.contains(path)) add("only after", path);
  }
  if (lines > limit) out += fmt::format("… and {} more\n", lines - limit);
  return out;
}

}  // namespace venvfix::txn
